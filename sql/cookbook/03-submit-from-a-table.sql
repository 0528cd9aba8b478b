-- as a submitter
CREATE TEMP TABLE my_staging (id text PRIMARY KEY, inputs jsonb);
\set inputs `cat sector-1236.json`
INSERT INTO my_staging VALUES ('sector-1236', :'inputs');
\set inputs `cat sector-1237.json`
INSERT INTO my_staging VALUES ('sector-1237', :'inputs');
SELECT cuzk.submit_proof(request_id => s.id, circuit => 'merkle-poseidon2-d8-c2', inputs => s.inputs)
  FROM my_staging s ORDER BY s.id;
