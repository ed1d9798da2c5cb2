/** The Postgres advisory locks the services take, each named once. */
export const DatabaseLock = {
  /** One process applies migrations at a time (a single bigint key). */
  Migration: 727_001,
  /**
   * The removal fence, per webhook: `(WebhookFence, hashtext(webhook id))`, shared by an attempt while it
   * writes its request, exclusive for DELETE and disable (src/delivery/store).
   */
  WebhookFence: 7270,
} as const;
