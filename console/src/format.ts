// How values read on screen: times in the reader's locale with the UTC value in a title.

export const time = (iso: string | null): string => (iso ? new Date(iso).toLocaleString() : 'never');

export const reason = (r: string | null): string =>
  ({ manual: 'disabled by hand', gone: 'the receiver answered 410 Gone', failing: 'failing for too long' })[r ?? ''] ??
  'unknown reason';

export const duration = (ms: number): string => (ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

/** A datetime-local value (the reader's time) as an ISO timestamp, or undefined when empty. */
export const fromLocalInput = (value: string): string | undefined =>
  value ? new Date(value).toISOString() : undefined;

/** An ISO timestamp as a datetime-local value in the reader's time. */
export const toLocalInput = (date: Date): string => {
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return local.toISOString().slice(0, 16);
};
