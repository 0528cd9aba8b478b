-- as the operator
CREATE ROLE curio LOGIN PASSWORD 'change-me' IN ROLE cuzk_submitter;  -- orchestrators
CREATE ROLE prover LOGIN PASSWORD 'change-me' IN ROLE cuzk_worker;    -- cuzk worker processes
