import { useLayoutEffect, useState } from 'preact/hooks';
import { allCalculators, api, type Calculator, type Submission, type WebhookSettings } from './api.js';
import { time } from './format.js';
import { Writable } from './portal.js';
import { href } from './router.js';
import { CursorPager, Heading, LoadError, Message, useAction, useLoad } from './ui.js';

const PAGE = 20;
// How many of the calculator's newest submissions a filter is tried on.
const TESTED = 20;

/** A calculator's submissions, newest first, as its webhooks receive them (DESIGN 11). */
export function SubmissionsView({ calculatorId }: { calculatorId: string }) {
  const calculator = useLoad(async () => (await allCalculators()).find((c) => c.id === calculatorId), [calculatorId]);
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const page = useLoad(() => api.submissions(calculatorId, { limit: PAGE, cursor: cursors.at(-1) }), [cursors]);

  return (
    <main>
      <p>
        <a href={href.webhooks()}>← Webhooks</a>
      </p>
      <Heading>Submissions of {calculator.data?.name ?? 'a calculator'}</Heading>
      <section aria-labelledby="submissions-title" class="card">
        <h2 id="submissions-title">Recent submissions</h2>
        <p>Newest first, each exactly as a webhook receives it in the payload's data.</p>
        <LoadError error={page.error ?? calculator.error} />
        {page.data && page.data.data.length === 0 && <p>No submissions yet.</p>}
        {page.data && <SubmissionList label="Submissions" submissions={page.data.data} />}
        <CursorPager label="Submission pages" cursors={cursors} onChange={setCursors} next={page.data?.nextCursor} />
      </section>
    </main>
  );
}

/** Submissions as cards; with `matching`, each says whether the filter lets it through. */
function SubmissionList({
  label,
  submissions,
  matching,
}: {
  label: string;
  submissions: Submission[];
  matching?: Set<string>;
}) {
  return (
    <ul class="cards compact" aria-label={label}>
      {submissions.map((s) => (
        <li key={s.id} class={matching?.has(s.id) ? 'card matches' : 'card'}>
          <p>
            {matching && <strong>{matching.has(s.id) ? 'Matches' : 'Held back'}</strong>} {time(s.createdAt)}
            {s.finished ? ', finished' : ', not finished'} <span class="mono">{s.id}</span>
          </p>
          <pre class="mono">{JSON.stringify({ data: s.data, meta: s.meta }, null, 2)}</pre>
        </li>
      ))}
    </ul>
  );
}

/**
 * A webhook's filter: edited, tried on a calculator's newest submissions (the same predicate as the
 * listing's `filter`, so what it marks is what the webhook would receive), saved and removed.
 */
export function FilterSection({
  webhookId,
  calculators,
}: {
  webhookId: string;
  calculators: Pick<Calculator, 'id' | 'name'>[];
}) {
  const settings = useLoad(() => api.settings(webhookId), [webhookId]);
  const [text, setText] = useState('');
  const [calculatorId, setCalculatorId] = useState(calculators[0]?.id ?? '');
  const [tried, setTried] = useState<{ submissions: Submission[]; matching: Set<string> }>();
  const action = useAction();
  const s = settings.data;

  // Before the page is painted, and the box is editable only once the settings are in: a filter typed
  // meanwhile would be replaced by the saved one.
  useLayoutEffect(() => setText(s?.filter ?? ''), [s]);

  const test = () =>
    action.run(async () => {
      setTried(undefined);
      const recent = (await api.submissions(calculatorId, { limit: TESTED })).data;
      if (recent.length === 0) return 'This calculator has no submissions yet to test the filter on.';
      // The same window: every matching submission from the oldest one shown on.
      const since = recent.at(-1)!.createdAt;
      const matched = (await api.submissions(calculatorId, { limit: 100, since, filter: text })).data;
      const matching = new Set(matched.map((m) => m.id));
      setTried({ submissions: recent, matching });
      const count = recent.filter((r) => matching.has(r.id)).length;
      return `The filter matches ${count} of the ${recent.length} newest submissions.`;
    });

  const save = (filter: string | null, done: string) =>
    action.run(async () => {
      await api.updateSettings(webhookId, { filter });
      await settings.reload();
      return done;
    });

  return (
    <section aria-labelledby="filter-title" class="card">
      <h2 id="filter-title">Submission filter</h2>
      <p>
        Only submissions this SQL/JSON path predicate matches are sent, e.g.{' '}
        <code>$.finished == true &amp;&amp; $.data.loanAmount &gt; 100000</code>. One it does not match, or on which it
        errors, makes no delivery.
      </p>
      <LoadError error={settings.error} />
      {s && <FilterCounts settings={s} />}
      <label for="filter-text">Filter</label>
      <textarea
        id="filter-text"
        class="mono"
        rows={3}
        maxLength={1000}
        spellcheck={false}
        value={text}
        disabled={!s}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      {calculators.length > 1 && (
        <>
          <label for="filter-calculator">Test on the submissions of</label>
          <select id="filter-calculator" value={calculatorId} onChange={(e) => setCalculatorId(e.currentTarget.value)}>
            {calculators.map((c) => (
              <option key={c.id} value={c.id}>
                {c.name}
              </option>
            ))}
          </select>
        </>
      )}
      <div class="actions">
        <button type="button" disabled={action.busy || text.trim() === ''} onClick={() => void test()}>
          Test filter
        </button>
        <Writable>
          <button
            type="button"
            disabled={action.busy || text.trim() === ''}
            onClick={() => void save(text, 'Filter saved: it applies to the next submission on.')}
          >
            Save filter
          </button>
          <button
            type="button"
            disabled={action.busy || !s?.filter}
            onClick={() => void save(null, 'Filter removed: every submission is sent again.')}
          >
            Remove filter
          </button>
        </Writable>
      </div>
      <Message message={action.message} />
      {tried && (
        <SubmissionList label="Filter test results" submissions={tried.submissions} matching={tried.matching} />
      )}
    </section>
  );
}

function FilterCounts({ settings: s }: { settings: WebhookSettings }) {
  if (!s.filter || !s.filterCounts) return <p>No filter: every submission is sent.</p>;
  const { passed, heldBack, since } = s.filterCounts;
  return (
    <p>
      Saved filter <code>{s.filter}</code>: since {time(since)}, {passed} passed and {heldBack} held back.
    </p>
  );
}
