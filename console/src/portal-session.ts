// The session a portal link opened (DESIGN 10), as this tab keeps it.
import { tabStorage } from './tab-storage.js';

const SESSION_STORAGE = 'ac-console-portal-session';

export interface PortalSession {
  token: string;
  expiresAt: string;
  readOnly: boolean;
}

/** The session lives in this tab only (tabStorage), like an API key: gone when the tab closes. */
export const portalSession = {
  get: (): PortalSession | null => JSON.parse(tabStorage.get(SESSION_STORAGE) ?? 'null') as PortalSession | null,
  keep: (session: PortalSession) => tabStorage.set(SESSION_STORAGE, JSON.stringify(session)),
  forget: () => tabStorage.remove(SESSION_STORAGE),
};
