import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from './api.js';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  reload: () => Promise<void>;
}

/** Loads on mount and when `deps` change (showing the previous data meanwhile); `everyMs` refreshes while the page is visible. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], everyMs?: number): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string }>({});
  const loadRef = useRef(load);
  loadRef.current = load;
  // Only the latest request's answer is shown: an older one that arrives late is dropped.
  const latest = useRef(0);
  const reload = useCallback(async () => {
    const request = ++latest.current;
    try {
      const data = await loadRef.current();
      if (request === latest.current) setState({ data });
    } catch (error) {
      if (request === latest.current) setState((s) => ({ data: s.data, error: describeError(error) }));
    }
  }, []);
  useEffect(() => {
    void reload();
    if (!everyMs) return;
    const timer = setInterval(() => document.visibilityState === 'visible' && void reload(), everyMs);
    return () => clearInterval(timer);
  }, deps);
  return { ...state, reload } as Loaded<T>;
}

/** Runs an action, keeps its button busy meanwhile, and reports its outcome. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState<{ text: string; error: boolean }>();
  const run = async (action: () => Promise<string | void>) => {
    setBusy(true);
    setMessage(undefined);
    try {
      const text = await action();
      if (text) setMessage({ text, error: false });
    } catch (error) {
      setMessage({ text: describeError(error), error: true });
    } finally {
      setBusy(false);
    }
  };
  return { busy, message, run, setMessage };
}

export function Message({ message }: { message?: { text: string; error: boolean } }) {
  if (!message) return null;
  return message.error ? (
    <p class="message error" role="alert">
      {message.text}
    </p>
  ) : (
    <p class="message ok" role="status">
      {message.text}
    </p>
  );
}

export function LoadError({ error }: { error?: string }) {
  return error ? (
    <p class="message error" role="alert">
      {error}
    </p>
  ) : null;
}

export function StatusBadge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status}</span>;
}

export function Fields({ children }: { children: ComponentChildren }) {
  return <dl class="fields">{children}</dl>;
}

export function Field({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** Focuses the page heading when a view opens, so keyboard and screen-reader users start there; names the tab. */
export function Heading({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => ref.current?.focus(), []);
  useEffect(() => {
    document.title = `${ref.current?.textContent} · Webhook console`;
  });
  return (
    <h1 tabIndex={-1} ref={ref}>
      {children}
    </h1>
  );
}

/** Newer and Older over cursor pages: `cursors[i]` opens page i (the first has none); `next` opens the one after. */
export function CursorPager({
  label,
  cursors,
  onChange,
  next,
}: {
  label: string;
  cursors: (string | undefined)[];
  onChange: (cursors: (string | undefined)[]) => void;
  next: string | null | undefined;
}) {
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" disabled={cursors.length === 1} onClick={() => onChange(cursors.slice(0, -1))}>
        Newer
      </button>
      <button type="button" disabled={!next} onClick={() => next && onChange([...cursors, next])}>
        Older
      </button>
    </nav>
  );
}
