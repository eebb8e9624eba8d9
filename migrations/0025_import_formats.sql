-- Imports read TCX and FIT activity files too (DeviceFiles' TCXReader and FITDecoder).
ALTER TABLE imports DROP CONSTRAINT imports_format_check;
ALTER TABLE imports ADD CONSTRAINT imports_format_check
    CHECK (format IN ('apple-health-xml', 'apple-health-zip', 'gpx', 'tcx', 'fit'));
