import { readFileSync } from 'node:fs';
import { DatabaseLock } from './database-lock.js';

/** A .sql file's text, each `{{DatabaseLock.Name}}` replaced by that lock's number (locks are named once). */
export function readSqlFile(url: URL): string {
  return readFileSync(url, 'utf8')
    .replace(/\{\{DatabaseLock\.(\w+)\}\}/g, (_, name: string) => {
      if (!(name in DatabaseLock)) throw new Error(`${url.pathname}: unknown lock DatabaseLock.${name}`);
      return String(DatabaseLock[name as keyof typeof DatabaseLock]);
    })
    .trimEnd();
}

/** A delivery store function's CREATE statement, from its sql/ file, as migrations apply it. */
export const storeFunction = (name: string): string =>
  readSqlFile(new URL(`../../delivery/store/sql/${name}.sql`, import.meta.url));
