-- River's tables and sequences (schema public, river_*) for cuzk_worker. Migration 003
-- granted the ones that existed then; a River upgrade can add more, so cuzk migrate
-- runs this after every migration run. Idempotent; nothing to do before 003 made the role.
DO $$
DECLARE
    t record;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'cuzk_worker') THEN
        RETURN;
    END IF;
    FOR t IN SELECT c.oid::regclass AS name, c.relkind FROM pg_class c
              WHERE c.relnamespace = 'public'::regnamespace AND c.relname LIKE 'river\_%'
                AND c.relkind IN ('r', 'S', 'p') LOOP
        IF t.relkind = 'S' THEN
            EXECUTE format('GRANT USAGE, SELECT, UPDATE ON SEQUENCE %s TO cuzk_worker', t.name);
        ELSE
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON TABLE %s TO cuzk_worker', t.name);
        END IF;
    END LOOP;
END $$;
