-- A request's payload is stored with lz4 where the server has it. A Filecoin C2's
-- inputs are tens of MB of JSON (10 partitions of porep-k27: 38 MB); pglz, the default,
-- compresses them at about 30 MB/s inside the submitting statement and decompresses
-- them slower than lz4 when a worker claims the request, and stores more (20.0 against
-- 16.7 MB). Values stored before keep their method; both read back alike.
DO $$
BEGIN
    ALTER TABLE cuzk.proof_requests ALTER COLUMN inputs SET COMPRESSION lz4,
                                    ALTER COLUMN witness SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this server has no lz4: request payloads stay compressed with pglz';
END $$;
