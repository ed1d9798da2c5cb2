import { createId, isCuid } from '@paralleldrive/cuid2';

export const newId = (): string => createId();

/** CUID2 as the spec names it: lowercase letter first, then lowercase letters and digits. */
export const isCuid2 = (value: unknown): value is string => typeof value === 'string' && isCuid(value);
