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

/** A signing secret shown once (after a rotation or a registration), with a copy button. */
export function ShownSecret({ secret, children }: { secret: string; children?: ComponentChildren }) {
  const [copied, setCopied] = useState(false);
  const [refused, setRefused] = useState(false);
  useEffect(() => setCopied(false), [secret]);

  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret);
      setCopied(true);
    } catch {
      // No clipboard access (denied, or not a secure origin): select the key so it can be copied by hand.
      const shown = document.getElementById('new-secret');
      if (shown) getSelection()?.selectAllChildren(shown);
      setRefused(true);
    }
  };

  return (
    <div class="secret" role="status">
      <p>New secret, shown only now: copy it into your receiver.</p>
      <code class="mono" id="new-secret">
        {secret}
      </code>
      <button type="button" onClick={copy} aria-describedby="new-secret">
        {copied ? 'Copied' : 'Copy secret'}
      </button>
      {refused && (
        <Message
          message={{ text: 'Copying was refused by the browser: the key is selected, copy it by hand.', error: true }}
        />
      )}
      {children}
    </div>
  );
}

/**
 * A card's Remove button (described by the card's title, `describedBy`) that asks first: `what` names the
 * thing removed, `children` say what removing it does; `action` runs `remove` and reports its outcome.
 */
export function RemoveButton({
  what,
  describedBy,
  action,
  remove,
  children,
}: {
  what: string;
  describedBy: string;
  action: ReturnType<typeof useAction>;
  remove: () => Promise<void>;
  children: ComponentChildren;
}) {
  const [asking, setAsking] = useState(false);
  const ref = useRef<HTMLDialogElement>(null);
  const confirm = () =>
    action.run(async () => {
      await remove();
      setAsking(false);
      return `Removed ${what}.`;
    });
  return (
    <>
      <button type="button" class="danger" aria-describedby={describedBy} onClick={() => setAsking(true)}>
        Remove
      </button>
      {asking && (
        <dialog
          ref={(el) => {
            ref.current = el;
            if (el && !el.open) el.showModal();
          }}
          aria-labelledby="remove-title"
          onClose={() => setAsking(false)}
        >
          <h2 id="remove-title">Remove {what}?</h2>
          <p>{children}</p>
          <div class="actions">
            <button type="button" class="danger" onClick={confirm}>
              Remove
            </button>
            <button type="button" onClick={() => ref.current?.close()} autofocus>
              Cancel
            </button>
          </div>
        </dialog>
      )}
    </>
  );
}
