import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium, recordOffServerRequests } from '../support/browser.js';
import { FAST_DELIVERY, FAST_MAX_ATTEMPTS, submit, verifySignature } from '../support/delivery.js';
import { client, listWebhooks, registerWebhook, type Client } from '../support/management-api.js';
import { Receiver, waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

const WIDE = { width: 1280, height: 900 };
const NARROW = { width: 375, height: 740 };
// CONSOLE_SCREENSHOTS=docs/screenshots saves the pictures of the main views in docs/console.md.
const SCREENSHOTS = process.env.CONSOLE_SCREENSHOTS;
const KEY_STORAGE = 'ac-console-api-key';

describe('console /console', () => {
  let t: TestApp;
  let api: Client;
  let key: string;
  let baseUrl: string;
  let browser: Browser;
  let page: Page;
  let ok: Receiver;
  let failing: Receiver;
  let calculatorA: { id: string; name: string };
  let calculatorB: { id: string; name: string };
  let failingWebhookId: string;
  const contexts: BrowserContext[] = [];
  const offServer: string[] = [];
  const consoleErrors: string[] = [];
  // The browser itself logs a fetch answered 4xx; the one the wrong-key test provokes is expected.
  const expectedErrors: RegExp[] = [];

  async function openPage(viewport = WIDE): Promise<Page> {
    const context = await browser.newContext({ viewport });
    contexts.push(context);
    const opened = await context.newPage();
    recordOffServerRequests(opened, baseUrl, offServer);
    opened.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(`${message.text()} ${message.location().url}`);
    });
    opened.on('pageerror', (error) => consoleErrors.push(error.message));
    return opened;
  }

  async function signIn(target: Page, apiKey = key): Promise<void> {
    await target.goto(`${baseUrl}/console/`);
    await target.getByLabel('API key').fill(apiKey);
    await target.getByRole('button', { name: 'Sign in' }).click();
  }

  async function screenshot(target: Page, name: string): Promise<void> {
    if (!SCREENSHOTS) return;
    mkdirSync(SCREENSHOTS, { recursive: true });
    const width = target.viewportSize()?.width;
    await target.screenshot({ path: `${SCREENSHOTS}/${name}-${width}.png`, fullPage: true });
  }

  /** Opens a webhook's page from the list and waits for one of its deliveries with this status. */
  async function openDelivery(target: Page, webhookName: string, status: string): Promise<void> {
    await target.goto(`${baseUrl}/console/#/webhooks`);
    await target.getByRole('link', { name: webhookName, exact: true }).click();
    const delivery = target.getByRole('list', { name: 'Deliveries of this webhook' }).getByRole('link', {
      name: new RegExp(`^${status} `),
    });
    await delivery.first().waitFor({ timeout: 15_000 });
    await delivery.first().click();
    await target.getByRole('heading', { name: 'Attempts' }).waitFor();
  }

  beforeAll(async () => {
    t = await createTestApp(FAST_DELIVERY);
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    const created = await createWorkspace(t, 'Console workspace');
    key = created.key;
    api = client(t, key);
    const pick = ({ id, name }: { id: string; name: string }) => ({ id, name });
    calculatorA = pick(await createCalculator(t, created.workspace.id, 'Mortgage calculator'));
    calculatorB = pick(await createCalculator(t, created.workspace.id, 'Loan calculator'));
    ok = await Receiver.start(() => ({ status: 200, body: 'thanks' }));
    failing = await Receiver.start(() => ({ status: 500, body: 'database down' }));
    browser = await launchChromium();
    page = await openPage();
  });
  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await ok?.close();
    await failing?.close();
    await t?.close();
  });

  it('serves the page under a strict Content-Security-Policy, leaving the API its own', async () => {
    const response = await page.goto(`${baseUrl}/console/`);
    expect(response?.status()).toBe(200);
    const csp = response?.headers()['content-security-policy'] ?? '';
    for (const directive of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ]) {
      expect(csp.split(';')).toContain(directive);
    }
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    const apiCsp = (await t.http().get('/api/v1/me').set('x-ac-api-key', key)).headers['content-security-policy'];
    expect(apiCsp).toBe("default-src 'none';frame-ancestors 'none'");
  });

  it('says so when the key is wrong, and keeps nothing', async () => {
    expectedErrors.push(/status of 401 .*\/api\/v1\/me$/);
    await signIn(page, 'ak_wrong_key_0000000000000000000000000000');
    await expect(page.getByRole('alert').innerText()).resolves.toMatch(/not accepted/);
    expect(await page.evaluate((k) => sessionStorage.getItem(k), KEY_STORAGE)).toBeNull();
    await screenshot(page, 'sign-in');
  });

  it('signs in with a key kept in the tab only, never in the URL', async () => {
    await signIn(page);
    await page.getByRole('heading', { name: 'Webhooks' }).waitFor();
    expect(page.url()).not.toContain(key);
    expect(await page.evaluate((k) => sessionStorage.getItem(k), KEY_STORAGE)).toBe(key);
  });

  it('registers a webhook with calculators chosen from the workspace list', async () => {
    await page.getByLabel('URL').fill(ok.url);
    await page.getByLabel('Name (optional)').fill('CRM sync');
    await page.getByRole('checkbox', { name: calculatorA.name }).check();
    await page.getByRole('button', { name: 'Register webhook' }).click();
    await page.getByRole('status').filter({ hasText: 'Registered CRM sync.' }).waitFor();
    await page.getByRole('link', { name: 'CRM sync', exact: true }).waitFor();

    const [webhook] = await listWebhooks(api);
    expect(webhook).toMatchObject({ name: 'CRM sync', url: ok.url, calculators: [calculatorA] });
  });

  it('shows a delivery arrive and succeed, with its attempt and payload', async () => {
    const submission = await submit(api, calculatorA.id, { data: { rate: 3.5 } });
    await openDelivery(page, 'CRM sync', 'succeeded');

    const attempts = page.getByRole('list', { name: 'Attempts' }).getByRole('listitem');
    await expect(attempts.count()).resolves.toBe(1);
    await expect(attempts.first().innerText()).resolves.toMatch(/Status code\s+200/);
    const payload = JSON.parse(await page.getByLabel('Payload JSON').innerText());
    expect(payload).toMatchObject({ event: 'newSubmission', data: { id: submission.id, data: { rate: 3.5 } } });
    expect(ok.requests).toHaveLength(1);
    await screenshot(page, 'delivery');
  });

  it("shows a failing receiver's attempts with their status codes, and retries", async () => {
    failingWebhookId = (
      await registerWebhook(api, { url: failing.url, name: 'Billing', calculators: [calculatorB.id] })
    ).id;
    await submit(api, calculatorB.id);
    await openDelivery(page, 'Billing', 'failed');

    const attempts = page.getByRole('list', { name: 'Attempts' }).getByRole('listitem');
    await expect(attempts.count()).resolves.toBe(FAST_MAX_ATTEMPTS);
    for (const text of await attempts.allInnerTexts()) expect(text).toMatch(/Status code\s+500/);
    await attempts.first().getByText('Response excerpt').click();
    await attempts.first().getByText('database down').waitFor();

    await page.getByRole('button', { name: 'Retry', exact: true }).click();
    await page.getByRole('status').filter({ hasText: 'Retry queued' }).waitFor();
    await waitFor(() => failing.requests.length === FAST_MAX_ATTEMPTS + 1, 10_000, 'the retried attempt');
    await page.getByRole('heading', { name: `Attempt ${FAST_MAX_ATTEMPTS + 1}` }).waitFor({ timeout: 10_000 });
  });

  it('shows the response excerpt of an attempt failed for a body too large', async () => {
    // Its own workspace and tab, so the other tests' counts of failed deliveries stay as they are.
    const other = await createWorkspace(t, 'Excerpt workspace');
    const calculator = await createCalculator(t, other.workspace.id, 'Quote calculator');
    const proxyPage = await Receiver.start(() => ({ status: 200, body: 'START-' + 'a'.repeat(100_000) }));
    try {
      const otherApi = client(t, other.key);
      await registerWebhook(otherApi, { url: proxyPage.url, name: 'Behind a proxy', calculators: [calculator.id] });
      await submit(otherApi, calculator.id);
      const tab = await openPage();
      await signIn(tab, other.key);
      await openDelivery(tab, 'Behind a proxy', 'failed');

      const attempt = tab.getByRole('list', { name: 'Attempts' }).getByRole('listitem').first();
      await expect(attempt.innerText()).resolves.toMatch(/Status code\s+200[\s\S]*Response body exceeds 65536 bytes/);
      await attempt.getByText('Response excerpt').click();
      const excerpt = await attempt.locator('pre').innerText();
      expect(excerpt).toMatch(/^START-a+$/);
      expect(excerpt).toHaveLength(2048);
    } finally {
      await proxyPage.close();
    }
  });

  it('filters a webhook’s deliveries by status', async () => {
    await page.goto(`${baseUrl}/console/#/webhooks/${failingWebhookId}`);
    const deliveries = page.getByRole('list', { name: 'Deliveries of this webhook' }).getByRole('listitem');
    await deliveries.first().waitFor();
    await page.getByLabel('Status').selectOption('succeeded');
    await page.getByText('No deliveries with status succeeded.').waitFor();
    await page.getByLabel('Status').selectOption('failed');
    await deliveries.first().waitFor();
    await expect(deliveries.count()).resolves.toBe(1);
    await screenshot(page, 'webhook');
  });

  it('disables and enables a webhook, showing its state', async () => {
    await page.goto(`${baseUrl}/console/#/webhooks/${failingWebhookId}`);
    const health = page.getByRole('region', { name: 'Health' });
    await health.getByRole('button', { name: 'Disable' }).click();
    await health.getByText('disabled by hand').waitFor();
    expect(await page.getByRole('button', { name: 'Send test event' }).isDisabled()).toBe(true);
    expect((await api.get(`/webhooks/${failingWebhookId}/health`)).body.data).toMatchObject({
      state: 'disabled',
      disabledReason: 'manual',
    });

    await health.getByRole('button', { name: 'Enable' }).click();
    await health.getByRole('button', { name: 'Disable' }).waitFor();
    expect((await api.get(`/webhooks/${failingWebhookId}/health`)).body.data).toMatchObject({
      state: 'active',
      consecutiveFailures: 0,
    });
  });

  it("changes a webhook's settings: name, limits, retry schedule and a header whose value is never shown", async () => {
    const token = 'Bearer console-0123456789-token';
    const webhook = await registerWebhook(api, { url: ok.url, name: 'Settings demo', calculators: [calculatorA.id] });
    await page.goto(`${baseUrl}/console/#/webhooks/${webhook.id}`);
    const settings = page.getByRole('region', { name: 'Settings' });
    await settings.getByLabel('Name', { exact: true }).fill('Settings renamed');
    await settings.getByLabel('Timeout in ms (1000 to 30000; empty for the default)').fill('2000');
    await settings.getByLabel('Requests in flight at most (1 to 100; empty for the default)').fill('5');
    await settings.getByLabel('Retry schedule').selectOption('short');
    await settings.getByRole('button', { name: 'Save settings' }).click();
    await settings.getByRole('status').filter({ hasText: 'Settings saved' }).waitFor();
    await page.getByRole('heading', { level: 1, name: 'Settings renamed' }).waitFor();
    expect((await api.get(`/webhooks/${webhook.id}/settings`)).body.data).toMatchObject({
      name: 'Settings renamed',
      timeoutMs: 2000,
      maxInFlight: 5,
      retrySchedule: 'short',
    });

    await settings.getByLabel('Header name').fill('Authorization');
    await settings.getByLabel('Header value').fill(token);
    await settings.getByRole('button', { name: 'Add header' }).click();
    await settings.getByText('authorization: Bear…').waitFor();
    expect(await page.content()).not.toContain('console-0123456789');
    await screenshot(page, 'settings');
    const before = ok.requests.length;
    await page.getByRole('button', { name: 'Send test event' }).click();
    const received = await waitFor(() => ok.requests[before], 10_000, 'the test event');
    expect(received.headers.authorization).toBe(token);

    await settings.getByRole('button', { name: 'Remove header authorization' }).click();
    await settings.getByText('No custom headers.').waitFor();
    expect((await api.get(`/webhooks/${webhook.id}/settings`)).body.data.headers).toEqual({});
    expectedErrors.push(new RegExp(`status of 400 .*/api/v1/webhooks/${webhook.id}$`));
    await settings.getByLabel('Header name').fill('Content-Type');
    await settings.getByLabel('Header value').fill('text/plain');
    await settings.getByRole('button', { name: 'Add header' }).click();
    await expect(settings.getByRole('alert').innerText()).resolves.toMatch(/set by the service/);
  });

  it('sends a test event to the receiver', async () => {
    await page.goto(`${baseUrl}/console/#/webhooks`);
    await page.getByRole('link', { name: 'CRM sync', exact: true }).click();
    const before = ok.requests.length;
    await page.getByRole('button', { name: 'Send test event' }).click();
    await page.getByRole('status').filter({ hasText: 'Test event queued' }).waitFor();
    const received = await waitFor(() => ok.requests[before], 10_000, 'the test event');
    expect(JSON.parse(received.body)).toMatchObject({ data: { meta: { test: true } } });
  });

  it('rotates the secret: the new key shown once with a copy button, the overlap explained', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: baseUrl });
    await page.getByLabel('Overlap in hours (0 to 168)').fill('1');
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const shown = await page.locator('#new-secret').innerText();
    expect(shown).toMatch(/^whsec_/);
    await page.getByText('The previous secret keeps signing too until').waitFor();
    await page.getByRole('button', { name: 'Copy secret' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(shown);
    const webhookId = (await listWebhooks(api)).find((w) => w.name === 'CRM sync')!.id;
    expect((await api.get(`/webhooks/${webhookId}/secret`)).body.data.key).toBe(shown);
    await screenshot(page, 'rotated-secret');

    await page.reload();
    await page.getByRole('button', { name: 'Rotate secret' }).waitFor();
    expect(await page.locator('#new-secret').count()).toBe(0);
  });

  it('recovers failed deliveries, counting them in a dry run first', async () => {
    await page.goto(`${baseUrl}/console/#/webhooks/${failingWebhookId}`);
    const recover = page.getByRole('region', { name: 'Recover' });
    expect(await recover.getByRole('button', { name: 'Recover' }).isDisabled()).toBe(true);
    const before = failing.requests.length;
    await recover.getByRole('button', { name: 'Count deliveries' }).click();
    await recover.getByText('1 delivery matches. Nothing has been sent yet.').waitFor();
    expect(failing.requests.length).toBe(before);

    await recover.getByRole('button', { name: 'Recover' }).click();
    await recover.getByText('Recovery completed: 1 of 1 requeued').waitFor({ timeout: 15_000 });
    await waitFor(() => failing.requests.length > before, 10_000, 'the recovered attempt');
  });

  it("lists the workspace's failed deliveries newest first, each linking to its delivery", async () => {
    await submit(api, calculatorB.id);
    await waitFor(
      async () => (await api.get('/deliveries?status=failed')).body.data?.length === 2,
      15_000,
      'a second failed delivery',
    );
    await page.goto(`${baseUrl}/console/#/webhooks`);
    await page.getByRole('link', { name: 'Failed deliveries' }).click();
    const rows = page.getByRole('list', { name: 'Failed deliveries' }).getByRole('listitem');
    await rows.nth(1).waitFor();
    const listed = (await api.get('/deliveries?status=failed')).body.data as { id: string; createdAt: string }[];
    expect(listed[0].createdAt >= listed[1].createdAt).toBe(true);
    await expect(rows.first().innerText()).resolves.toMatch(/Webhook\s+Billing/);
    await screenshot(page, 'failed');

    await rows.first().getByRole('link').click();
    await page.getByRole('heading', { name: `Delivery ${listed[0].id}` }).waitFor();
    await page.getByRole('list', { name: 'Attempts' }).getByRole('listitem').first().waitFor();
  });

  it('searches the failed deliveries by the last status code or its class', async () => {
    const failed = (await api.get('/deliveries?status=failed')).body.data as { lastStatusCode: number | null }[];
    const code = failed.find((d) => d.lastStatusCode !== null)!.lastStatusCode!;
    const matching = failed.filter((d) => d.lastStatusCode === code).length;
    await page.goto(`${baseUrl}/console/#/webhooks`);
    await page.getByRole('link', { name: 'Failed deliveries' }).click();
    const rows = page.getByRole('list', { name: 'Failed deliveries' }).getByRole('listitem');
    await rows.first().waitFor();
    const search = page.getByRole('search', { name: 'Search failed deliveries' });
    await search.getByLabel(/Status code/).fill(`${String(code)[0]}xx`);
    await search.getByRole('button', { name: 'Search' }).click();
    await waitFor(async () => (await rows.count()) === matching, 10_000, `${matching} deliveries of the class`);
    await expect(rows.first().innerText()).resolves.toMatch(new RegExp(`Last status code\\s+${code}`));
    await search.getByLabel(/Status code/).fill('1xx');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No failed deliveries.').waitFor();
    expectedErrors.push(/status of 400 .*\/api\/v1\/deliveries\?.*statusCode=600$/);
    await search.getByLabel(/Status code/).fill('600');
    await search.getByRole('button', { name: 'Search' }).click();
    await page.getByText(/statusCode/).waitFor();
  });

  it("shows the workspace's changes in Activity, newest first, filtered by action", async () => {
    const webhookId = (await listWebhooks(api)).find((w) => w.name === 'CRM sync')!.id;
    const rotated = await api.post(`/webhooks/${webhookId}/secret/rotate`, { overlapSeconds: 60 });
    expect(rotated.status).toBe(200);
    await page.goto(`${baseUrl}/console/#/webhooks`);
    await page.getByRole('link', { name: 'Activity' }).click();
    const rows = page.getByRole('list', { name: 'Changes' }).getByRole('listitem');
    await rows.first().waitFor();
    await expect(rows.first().innerText()).resolves.toMatch(/^Signing secret rotated/);
    await expect(rows.first().innerText()).resolves.toContain(rotated.headers['x-request-id'] as string);
    await screenshot(page, 'activity');

    await page.getByLabel('Action').selectOption('webhook.created');
    const onlyCreated = async () => {
      const texts = await rows.allInnerTexts();
      return texts.length > 0 && texts.every((text) => text.startsWith('Webhook registered'));
    };
    await waitFor(onlyCreated, 5_000, 'only registrations listed');

    await rows.first().getByRole('link').click();
    await page.getByRole('heading', { level: 1 }).waitFor();
    expect(page.url()).toMatch(/#\/webhooks\/[a-z0-9]+$/);
  });

  it("pages through a webhook's deliveries, 20 at a time", async () => {
    const webhookId = (await listWebhooks(api)).find((w) => w.name === 'CRM sync')!.id;
    for (let i = 0; i < 20; i++) await submit(api, calculatorA.id, { data: { n: i } });
    const total = ((await api.get(`/webhooks/${webhookId}/deliveries?limit=100`)).body.data as unknown[]).length;
    expect(total).toBeGreaterThan(20);

    await page.goto(`${baseUrl}/console/#/webhooks/${webhookId}`);
    const rows = page.getByRole('list', { name: 'Deliveries of this webhook' }).getByRole('listitem');
    await rows.nth(19).waitFor();
    await expect(rows.count()).resolves.toBe(20);
    expect(await page.getByRole('button', { name: 'Newer' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Older' }).click();
    await waitFor(async () => (await rows.count()) === total - 20, 5_000, 'the second page');
    expect(await page.getByRole('button', { name: 'Older' }).isDisabled()).toBe(true);
    await page.getByRole('button', { name: 'Newer' }).click();
    await waitFor(async () => (await rows.count()) === 20, 5_000, 'the first page again');
  });

  it('removes a webhook only after a confirmation', async () => {
    const spare = await registerWebhook(api, { url: ok.url, name: 'Spare', calculators: [calculatorA.id] });
    await page.goto(`${baseUrl}/console/#/webhooks`);
    const card = page.getByRole('listitem').filter({ has: page.getByRole('link', { name: 'Spare', exact: true }) });
    await card.getByRole('button', { name: 'Remove' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog.count()).resolves.toBe(0);
    expect((await listWebhooks(api)).map((w) => w.id)).toContain(spare.id);

    await card.getByRole('button', { name: 'Remove' }).click();
    await dialog.getByRole('button', { name: 'Remove' }).click();
    await page.getByRole('status').filter({ hasText: 'Removed Spare.' }).waitFor();
    expect((await listWebhooks(api)).map((w) => w.id)).not.toContain(spare.id);
    await screenshot(page, 'webhooks');
  });

  it('registers an operational webhook (its secret shown once), whose events arrive signed, and removes it', async () => {
    const events = await Receiver.start();
    try {
      await page.goto(`${baseUrl}/console/#/webhooks`);
      await page.getByRole('link', { name: 'Operational webhooks' }).click();
      await page.getByRole('heading', { name: 'Operational webhooks', level: 1 }).waitFor();
      await page.getByText('No operational webhooks yet').waitFor();
      const form = page.getByRole('region', { name: 'Register an operational webhook' });
      await form.getByLabel('URL').fill(events.url);
      await form.getByRole('checkbox', { name: 'webhook.disabled' }).check();
      await form.getByRole('checkbox', { name: 'webhook.enabled' }).check();
      await form.getByRole('button', { name: 'Register operational webhook' }).click();
      await form
        .getByRole('status')
        .filter({ hasText: `Registered ${events.url}.` })
        .waitFor();
      const secret = await page.locator('#new-secret').innerText();
      expect(secret).toMatch(/^whsec_/);
      await form.getByRole('button', { name: 'Copy secret' }).click();
      await form.getByRole('button', { name: 'Copied' }).waitFor();
      expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(secret);
      const card = page.getByRole('listitem').filter({ hasText: events.url });
      await card.getByText('webhook.disabled, webhook.enabled').waitFor();
      await screenshot(page, 'operational-webhooks');

      // A change to a webhook reaches it, signed with the secret the page showed.
      const watched = await registerWebhook(api, { url: ok.url, name: 'Watched', calculators: [calculatorA.id] });
      await api.post(`/webhooks/${watched.id}/disable`).expect(200);
      await waitFor(() => events.requests.length === 1 || null, 10_000, 'the webhook.disabled event');
      expect(verifySignature(secret, events.requests[0])).toMatchObject({
        type: 'webhook.disabled',
        data: { webhook: { id: watched.id }, reason: 'manual' },
      });
      await api.delete(`/webhooks/${watched.id}`).expect(200);

      await page.reload();
      await card.getByRole('button', { name: 'Remove' }).waitFor();
      expect(await page.locator('#new-secret').count()).toBe(0);
      await card.getByRole('button', { name: 'Remove' }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('button', { name: 'Remove' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `Removed ${events.url}.` })
        .waitFor();
      expect((await api.get('/operational-webhooks')).body.data).toEqual([]);
    } finally {
      await events.close();
    }
  });

  it('signs out and forgets the key', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('API key').waitFor();
    expect(await page.evaluate((k) => sessionStorage.getItem(k), KEY_STORAGE)).toBeNull();
    await page.reload();
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
  });

  it('is usable 375 px wide: no sideways scrolling, every control within reach', async () => {
    const narrow = await openPage(NARROW);
    await signIn(narrow);
    const [delivery] = (await api.get(`/webhooks/${failingWebhookId}/deliveries`)).body.data as { id: string }[];
    const views = [
      ['#/webhooks', 'webhooks'],
      [`#/webhooks/${failingWebhookId}`, 'webhook'],
      [`#/deliveries/${delivery.id}`, 'delivery'],
      ['#/failed', 'failed'],
      ['#/operational-webhooks', 'operational-webhooks'],
    ];
    for (const [view, name] of views) {
      await narrow.goto(`${baseUrl}/console/${view}`);
      await narrow.getByRole('button').last().waitFor();
      await narrow.waitForLoadState('networkidle');
      // Page-side code as text: this file is compiled without the DOM's types.
      const [scrollWidth, innerWidth] = await narrow.evaluate<[number, number]>(
        '[document.documentElement.scrollWidth, window.innerWidth]',
      );
      expect(scrollWidth).toBeLessThanOrEqual(innerWidth);
      for (const control of await narrow.locator('button, input, select, a').all()) {
        if (!(await control.isVisible())) continue;
        await control.scrollIntoViewIfNeeded();
        const box = await control.boundingBox();
        expect(box && box.x >= 0 && box.x + box.width <= NARROW.width).toBe(true);
      }
      await screenshot(narrow, name);
    }
  });

  it('works by keyboard alone: sign in, open a webhook, retry a delivery', async () => {
    const keyboard = await openPage();
    await keyboard.goto(`${baseUrl}/console/`);
    // The focused element as tag:id, or tag:its text.
    const focused = () =>
      keyboard.evaluate<string>(
        "(() => { const el = document.activeElement; return el.tagName.toLowerCase() + ':' + (el.tagName === 'INPUT' ? el.id : el.innerText.trim()); })()",
      );
    const tabTo = async (target: string) => {
      for (let i = 0; i < 80 && (await focused()) !== target; i++) await keyboard.keyboard.press('Tab');
      expect(await focused()).toBe(target);
    };
    await tabTo('input:api-key');
    await keyboard.keyboard.type(key);
    await tabTo('button:Sign in');
    await keyboard.keyboard.press('Enter');
    await keyboard.getByRole('heading', { name: 'Webhooks' }).waitFor();
    await tabTo('a:Billing');
    await keyboard.keyboard.press('Enter');
    await keyboard.getByRole('heading', { name: 'Billing' }).waitFor();
    await keyboard.getByRole('button', { name: 'Retry', exact: true }).first().waitFor();
    const before = failing.requests.length;
    await tabTo('button:Retry');
    await keyboard.keyboard.press('Enter');
    await keyboard.getByRole('status').filter({ hasText: 'Retry queued' }).waitFor();
    await waitFor(() => failing.requests.length > before, 10_000, 'the retried attempt');
  });

  it('loads nothing from outside this server and logs no error in the browser console', () => {
    expect(offServer).toEqual([]);
    expect(consoleErrors.filter((e) => !expectedErrors.some((re) => re.test(e)))).toEqual([]);
  });
});
