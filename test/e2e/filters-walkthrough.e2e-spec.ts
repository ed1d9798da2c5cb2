import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { useFastDeliveryApp, verifySignature } from '../support/delivery.js';
import { client, signingSecret } from '../support/management-api.js';
import { expectNothingFor, waitFor } from '../support/receiver.js';
import { createCalculator, createWorkspace } from '../support/test-app.js';

// docs/api/filters.md as a reader runs it: its ```sh blocks pasted in order into one bash, against the
// api on a port and a real local receiver; each block's output must be the ```text block after it.

const PAGE = new URL('../../docs/api/filters.md', import.meta.url);
// The worker sends a due delivery within tens of ms; a request not there after this was never sent.
const NO_SEND_WINDOW_MS = 1_000;

interface Block {
  script: string;
  expected?: string;
}

/** The page's sh blocks, each with the text block that follows it, if one does. */
function blocksOf(markdown: string): Block[] {
  const blocks: Block[] = [];
  for (const [, lang, body] of markdown.matchAll(/^```(sh|text)\n([\s\S]*?)^```$/gm)) {
    if (lang === 'sh') blocks.push({ script: body });
    else blocks.at(-1)!.expected = body;
  }
  return blocks;
}

const ctx = useFastDeliveryApp();

describe('docs/api/filters.md', () => {
  it('runs as pasted: the filter tested, saved, then one submission delivered and one held back', async () => {
    const receiver = await ctx.startReceiver();
    const { workspace, key } = await createWorkspace(ctx.t);
    await createCalculator(ctx.t, workspace.id, 'Loans');
    await ctx.t.app.listen(0, '127.0.0.1');
    const port = (ctx.t.app.getHttpServer().address() as AddressInfo).port;

    const blocks = blocksOf(readFileSync(PAGE, 'utf8'));
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    const marker = (i: number) => `--- block ${i} ---`;
    const script = ['set -euo pipefail', ...blocks.flatMap((b, i) => [`echo '${marker(i)}'`, b.script])].join('\n');
    const { stdout } = await promisify(execFile)('bash', ['-c', script], {
      env: { PATH: process.env.PATH, API: `http://127.0.0.1:${port}/api/v1`, KEY: key, RECEIVER: receiver.url },
    });
    const outputs = stdout.split(/^--- block \d+ ---\n/m).slice(1);
    expect(outputs).toHaveLength(blocks.length);
    blocks.forEach((block, i) => {
      if (block.expected !== undefined)
        expect({ block: i, output: outputs[i] }).toEqual({ block: i, output: block.expected });
    });

    // Two submissions before the webhook, two after: the receiver gets the one the filter matched.
    const [webhook] = (await client(ctx.t, key).get('/webhooks')).body.data as { id: string }[];
    const secret = await signingSecret(client(ctx.t, key), webhook.id);
    await waitFor(() => receiver.requests.length === 1, 5000, 'the matching submission');
    await expectNothingFor(
      NO_SEND_WINDOW_MS,
      'delivery of the held-back submission',
      () => receiver.requests.length > 1,
    );
    const payload = verifySignature(secret, receiver.requests[0]) as { data: { data: unknown; finished: boolean } };
    expect(payload.data).toMatchObject({ data: { loanAmount: 320000 }, finished: true });
  });
});
