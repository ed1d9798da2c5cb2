import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';

// What a scenario has started, kept on disk so that test/faults/leftovers.mjs can remove it when
// the run is interrupted (Jest gives tests a copy of `process`, whose exit and signal events never fire).
export const LEFTOVERS_FILE = 'test-results/faults/live.json';

export interface Leftovers {
  /** A process and its command line: a pid alone could by now name someone else's process. */
  processes: { pid: number; cmdline: string }[];
  postgresDirs: string[];
  databases: string[];
  redisPrefixes: string[];
}

function read(): Leftovers {
  if (!existsSync(LEFTOVERS_FILE)) return { processes: [], postgresDirs: [], databases: [], redisPrefixes: [] };
  return JSON.parse(readFileSync(LEFTOVERS_FILE, 'utf8')) as Leftovers;
}

function update(change: (l: Leftovers) => void): void {
  const leftovers = read();
  change(leftovers);
  mkdirSync('test-results/faults', { recursive: true });
  writeFileSync(LEFTOVERS_FILE, JSON.stringify(leftovers));
}

export function remember<K extends keyof Leftovers>(kind: K, value: Leftovers[K][number]): void {
  update((l) => (l[kind] as unknown[]).push(value));
}

export function forget<K extends keyof Leftovers>(kind: K, value: Leftovers[K][number]): void {
  const same = (v: unknown) => JSON.stringify(v) === JSON.stringify(value);
  update((l) => {
    l[kind] = (l[kind] as unknown[]).filter((v) => !same(v)) as Leftovers[K];
  });
}
