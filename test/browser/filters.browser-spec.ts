import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, recordOffServerRequests } from '../support/browser.js';
import { FAST_DELIVERY, submit, verifySignature } from '../support/delivery.js';
import { client, registerWebhook, signingSecret, type Client } from '../support/management-api.js';
import { expectNothingFor, Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

// The console's filter (DESIGN 11) in a real browser: a calculator's submissions browsed, a webhook's
// filter tested against them (matching ones marked), saved, counted as submissions arrive, and removed.

const FILTER = '$.finished == true && $.data.loanAmount > 100000';
// The worker sends a due delivery within tens of ms; one not sent after this never was going to be.
const NO_SEND_WINDOW_MS = 1_000;

describe('console: sample submissions and a webhook filter', () => {
  let t: TestApp;
  let api: Client;
  let key: string;
  let baseUrl: string;
  let browser: Browser;
  let page: Page;
  let receiver: Receiver;
  let calculator: { id: string; name: string };
  let webhookId: string;
  const offServer: string[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    t = await createTestApp(FAST_DELIVERY);
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    const created = await createWorkspace(t, 'Filter workspace');
    key = created.key;
    api = client(t, key);
    calculator = await createCalculator(t, created.workspace.id, 'Loan calculator');
    await submit(api, calculator.id, { data: { loanAmount: 250000 }, finished: true });
    await submit(api, calculator.id, { data: { loanAmount: 30000 }, finished: true });
    await submit(api, calculator.id, { data: { loanAmount: 400000 }, finished: true });
    receiver = await Receiver.start();
    // Registered after the samples, so the receiver gets only what the filter lets through.
    webhookId = (await registerWebhook(api, { url: receiver.url, name: 'Big loans', calculators: [calculator.id] })).id;
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    recordOffServerRequests(page, baseUrl, offServer);
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${baseUrl}/console/`);
    await page.getByLabel('API key').fill(key);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: 'Big loans', exact: true }).click();
  });
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await t?.close();
  });

  afterEach(() => {
    expect(offServer).toEqual([]);
    expect(pageErrors).toEqual([]);
  });

  it("browses a calculator's recent submissions from the webhook's page", async () => {
    await page.getByRole('link', { name: 'Submissions of Loan calculator' }).click();
    const list = page.getByRole('list', { name: 'Submissions', exact: true });
    await list.getByRole('listitem').first().waitFor();
    const items = await list.getByRole('listitem').allInnerTexts();
    expect(items.map((text) => /"loanAmount": (\d+)/.exec(text)?.[1])).toEqual(['400000', '30000', '250000']);
    await page.goBack();
    await page.getByRole('heading', { name: 'Submission filter' }).waitFor();
  });

  it("says why a filter is refused, in Postgres's words", async () => {
    await page.getByRole('textbox', { name: 'Filter', exact: true }).fill('$.data.loanAmount');
    await page.getByRole('button', { name: 'Test filter' }).click();
    await expect(page.getByRole('alert').innerText()).resolves.toMatch(
      /must be a predicate.*single boolean result is expected/,
    );
  });

  it('tests a filter against the recent submissions, the matching ones marked', async () => {
    await page.getByRole('textbox', { name: 'Filter', exact: true }).fill(FILTER);
    await page.getByRole('button', { name: 'Test filter' }).click();
    await page.getByRole('status').filter({ hasText: 'The filter matches 2 of the 3 newest submissions.' }).waitFor();
    const results = await page.getByRole('list', { name: 'Filter test results' }).getByRole('listitem').allInnerTexts();
    expect(results.map((text) => [text.split(' ')[0], /"loanAmount": (\d+)/.exec(text)?.[1]])).toEqual([
      ['Matches', '400000'],
      ['Held', '30000'],
      ['Matches', '250000'],
    ]);
    expect((await api.get(`/webhooks/${webhookId}/settings`)).body.data.filter).toBeNull();
  });

  it('saves it: the next submissions are sent or held back, and counted', async () => {
    await page.getByRole('button', { name: 'Save filter' }).click();
    await page.getByRole('status').filter({ hasText: 'Filter saved' }).waitFor();
    expect((await api.get(`/webhooks/${webhookId}/settings`)).body.data.filter).toBe(FILTER);

    const big = await submit(api, calculator.id, { data: { loanAmount: 900000 }, finished: true });
    await submit(api, calculator.id, { data: { loanAmount: 900000 }, finished: false });
    await waitFor(() => receiver.requests.length === 1, 5000, 'the matching submission');
    await expectNothingFor(
      NO_SEND_WINDOW_MS,
      'delivery of the held-back submission',
      () => receiver.requests.length > 1,
    );
    const secret = await signingSecret(api, webhookId);
    expect(verifySignature(secret, receiver.requests[0])).toMatchObject({ data: { id: big.id } });

    await page.reload();
    await page.getByText(/1 passed and 1 held back/).waitFor();
  });

  it('removes it: every submission is sent again', async () => {
    await page.getByRole('button', { name: 'Remove filter' }).click();
    await page.getByRole('status').filter({ hasText: 'Filter removed' }).waitFor();
    await page.getByText('No filter: every submission is sent.').waitFor();
    expect((await api.get(`/webhooks/${webhookId}/settings`)).body.data).toMatchObject({
      filter: null,
      filterCounts: null,
    });
    await expect(page.getByRole('button', { name: 'Remove filter' }).isDisabled()).resolves.toBe(true);
  });

  it('fits a 375 px wide screen', async () => {
    const narrow = await browser.newPage({ viewport: { width: 375, height: 740 } });
    try {
      await narrow.goto(`${baseUrl}/console/`);
      await narrow.getByLabel('API key').fill(key);
      await narrow.getByRole('button', { name: 'Sign in' }).click();
      await narrow.getByRole('link', { name: 'Big loans', exact: true }).click();
      await narrow.getByRole('textbox', { name: 'Filter', exact: true }).fill(FILTER);
      await narrow.getByRole('button', { name: 'Test filter' }).click();
      await narrow.getByRole('list', { name: 'Filter test results' }).waitFor();
      const [scrollWidth, innerWidth] = await narrow.evaluate<[number, number]>(
        '[document.documentElement.scrollWidth, window.innerWidth]',
      );
      expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
    } finally {
      await narrow.close();
    }
  });
});
