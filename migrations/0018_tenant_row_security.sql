-- Defence in depth for tenancy: while DatabaseLink serves an authenticated organisation, it
-- switches each transaction to the role data4help_tenant and sets data4help.third_party_id
-- (TenantScope). For that role, row-level security shows and accepts only the organisation's own
-- rows of the tables a third party reads, so a handler that forgot its WHERE clause still cannot
-- return (or write) another tenant's rows. The owner role that runs migrations and background
-- work is not subject to these policies; nothing changes for it.
-- Roles belong to the whole cluster: another database of it may be creating this one at the
-- same moment, which is not an error.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'data4help_tenant') THEN
        CREATE ROLE data4help_tenant NOLOGIN NOSUPERUSER NOBYPASSRLS;
    END IF;
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;
DO $$
BEGIN
    GRANT data4help_tenant TO CURRENT_USER;   -- so that the owner may SET ROLE to it
EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
END
$$;

GRANT USAGE ON SCHEMA public TO data4help_tenant;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO data4help_tenant;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO data4help_tenant;
-- Tables created later (monthly sample partitions, future migrations) are granted too.
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO data4help_tenant;
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO data4help_tenant;

-- The organisation's requests and grants, the events about them, what was disclosed to it, and
-- its API keys. A missing setting matches nothing.
DO $$
DECLARE
    tenant_table text;
BEGIN
    FOREACH tenant_table IN ARRAY ARRAY['access_requests', 'party_events', 'disclosures', 'api_keys'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', tenant_table);
        EXECUTE format($policy$
            CREATE POLICY tenant_rows ON %I TO data4help_tenant
                USING (third_party_id = nullif(current_setting('data4help.third_party_id', true), '')::int8)
                WITH CHECK (third_party_id = nullif(current_setting('data4help.third_party_id', true), '')::int8)
            $policy$, tenant_table);
    END LOOP;
END
$$;
