import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'auth:isPublic';
/** IS_PUBLIC's value on a public route the per-IP rate limit still counts. */
export const PUBLIC_PER_IP_LIMITED = 'per-ip-limited';
export const API_KEY_ONLY = 'auth:apiKeyOnly';

/**
 * Marks a route that needs no credential: health probes (never rate limited), or, with `perIpLimit`, one
 * that checks a credential of its own (the portal link exchange), which the per-IP limit counts.
 */
export const Public = ({ perIpLimit = false } = {}) =>
  SetMetadata(IS_PUBLIC, perIpLimit ? PUBLIC_PER_IP_LIMITED : true);

/** Marks a route a portal session may not use (making or revoking portal links): 403. */
export const ApiKeyOnly = () => SetMetadata(API_KEY_ONLY, true);
