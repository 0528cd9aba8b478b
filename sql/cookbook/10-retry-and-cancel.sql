-- as a submitter
SELECT cuzk.retry_proof('sector-1238');   -- failed/cancelled -> queued again; returns the new River job's id
SELECT cuzk.cancel_proof('sector-1238');  -- queued or running -> cancelled: true
SELECT cuzk.cancel_proof('sector-1234');  -- already ended: false
