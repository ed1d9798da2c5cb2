import { PORTAL_SESSION_HEADER } from '../../src/portal/portal-token.js';
import { API, client, expectJson, keysOf, type Client } from './management-api.js';
import type { TestApp } from './test-app.js';

export const PORTAL_LINK_KEYS = ['createdAt', 'expiresAt', 'id', 'readOnly', 'revokedAt', 'usedAt'];

export interface CreatedPortalLink {
  id: string;
  url: string;
  readOnly: boolean;
  expiresAt: string;
}

/** POST /portal-links with an API key; the answer checked for its exact keys. */
export async function createPortalLink(api: Client, body: object = {}): Promise<CreatedPortalLink> {
  const res = await api.post('/portal-links', body);
  expectJson(res, 200);
  expect(keysOf(res.body.data)).toEqual([...PORTAL_LINK_KEYS, 'url'].sort());
  return res.body.data as CreatedPortalLink;
}

/** The token in a portal link's URL fragment. */
export const tokenOf = (url: string): string => new URL(url).hash.replace(/^#portal=/, '');

/** POST /portal-sessions as the console makes it, with no credential but the token. */
export const exchange = (t: TestApp, token: string) => t.http().post(`${API}/portal-sessions`).send({ token });

/** Opens the link's session; returns its credential. */
export async function openSession(t: TestApp, link: CreatedPortalLink): Promise<string> {
  const res = await exchange(t, tokenOf(link.url));
  expectJson(res, 200);
  expect(keysOf(res.body.data)).toEqual(['expiresAt', 'readOnly', 'token']);
  return res.body.data.token as string;
}

/** Requests to the API with a portal session instead of an API key. */
export const sessionClient = (t: TestApp, session: string): Client => client(t, session, PORTAL_SESSION_HEADER);
