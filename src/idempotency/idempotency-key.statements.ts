/**
 * SQL because the claim must be one atomic statement across api replicas: insert the key, or take over
 * a row that has expired, or a claim of the same request whose process died before it answered (no
 * answer after `$7` ms). Returns the claim's created_at (the claim token), or no row when another
 * request holds or answered the key.
 */
export const IDEMPOTENCY_CLAIM = `
  INSERT INTO idempotency_keys AS k (workspace_id, key, method, path, body_hash, expires_at)
  VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6::double precision / 1000))
  ON CONFLICT (workspace_id, key) DO UPDATE
    SET method = EXCLUDED.method, path = EXCLUDED.path, body_hash = EXCLUDED.body_hash, status_code = NULL,
        response_body = NULL, created_at = now(), completed_at = NULL, expires_at = EXCLUDED.expires_at
    WHERE k.expires_at <= now()
       OR (k.status_code IS NULL AND k.created_at <= now() - make_interval(secs => $7::double precision / 1000)
           AND k.method = EXCLUDED.method AND k.path = EXCLUDED.path AND k.body_hash = EXCLUDED.body_hash)
  RETURNING k.created_at`;

/** SQL because DELETE has no LIMIT: one small batch of expired keys (by the expires_at index). */
export const IDEMPOTENCY_PURGE_BATCH = `
  DELETE FROM idempotency_keys WHERE ctid = ANY(ARRAY(
    SELECT ctid FROM idempotency_keys WHERE expires_at <= now() LIMIT $1))`;
