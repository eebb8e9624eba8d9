-- Instances keep recently resolved login tokens and API keys in memory (issue 26: a request no
-- longer costs a credential lookup). A credential that stops working — revoked, shortened,
-- deleted with its account — is announced on 'data4help_credentials' with the hex of its
-- SHA-256, when the change commits; every instance forgets it at once.
CREATE FUNCTION data4help_access_token_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('data4help_credentials', encode(OLD.token_hash, 'hex'));
    RETURN NULL;
END
$$;
CREATE TRIGGER access_tokens_ended AFTER UPDATE OF revoked_at, expires_at, token_hash OR DELETE ON access_tokens
    FOR EACH ROW EXECUTE FUNCTION data4help_access_token_ended();

CREATE FUNCTION data4help_api_key_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('data4help_credentials', encode(OLD.key_hash, 'hex'));
    RETURN NULL;
END
$$;
CREATE TRIGGER api_keys_ended AFTER UPDATE OF revoked_at, key_hash, third_party_id OR DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION data4help_api_key_ended();
