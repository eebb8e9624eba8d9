-- AutomatedSOS enrolment: an individual's thresholds, cancel window, emergency contacts and the
-- medical notes passed to the ambulance. No row means not enrolled (the defaults, disabled).
CREATE TABLE sos_settings (
    individual_id         bigint      PRIMARY KEY REFERENCES individuals (id) ON DELETE CASCADE,
    updated_at            timestamptz NOT NULL DEFAULT now(),
    enabled               boolean     NOT NULL,
    min_heart_rate        real        NOT NULL,
    max_heart_rate        real,
    min_oxygen_saturation real,
    consecutive_readings  smallint    NOT NULL,
    cancel_window_seconds smallint    NOT NULL,
    contacts              jsonb       NOT NULL DEFAULT '[]',   -- [{ name, phone, email, webhookUrl }]
    medical_notes         text        NOT NULL DEFAULT '',
    CONSTRAINT sos_settings_heart_rate_check CHECK (max_heart_rate IS NULL OR max_heart_rate > min_heart_rate),
    CONSTRAINT sos_settings_consecutive_check CHECK (consecutive_readings BETWEEN 1 AND 10),
    CONSTRAINT sos_settings_cancel_window_check CHECK (cancel_window_seconds BETWEEN 0 AND 4)
);
-- Every heart-rate upload asks whether its individual is enrolled.
CREATE INDEX sos_settings_enabled_idx ON sos_settings (individual_id) WHERE enabled;
