// This tab's sessionStorage, or memory where the browser denies it: a console framed by another site
// (DESIGN 10) with third-party storage blocked. In memory, a reload forgets what was kept.

const memory = new Map<string, string>();

function storage(): Storage | null {
  try {
    return sessionStorage;
  } catch {
    return null;
  }
}

export const tabStorage = {
  get: (name: string): string | null => storage()?.getItem(name) ?? memory.get(name) ?? null,
  set: (name: string, value: string) => (storage() ? storage()!.setItem(name, value) : memory.set(name, value)),
  remove: (name: string) => {
    storage()?.removeItem(name);
    memory.delete(name);
  },
};
