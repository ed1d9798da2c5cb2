import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Frame, Page } from 'playwright-core';
import { launchChromium } from '../support/browser.js';
import { client, expectError, registerWebhook, type Client } from '../support/management-api.js';
import { createPortalLink, sessionClient, tokenOf, type CreatedPortalLink } from '../support/portal.js';
import { waitFor } from '../support/receiver.js';
import { createCalculator, createTestApp, createWorkspace, freePort, type TestApp } from '../support/test-app.js';

// Portal links (DESIGN 10) in a real browser: a product's page on another origin embeds the link's URL in an
// iframe; the console inside signs itself in, and the token leaves the address bar at once.

/** A product's page: another origin (localhost, not the api's 127.0.0.1) that frames `src`. */
class Embedder {
  private src = 'about:blank';

  private constructor(
    private readonly server: Server,
    readonly origin: string,
  ) {}

  static async start(port: number): Promise<Embedder> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    const embedder = new Embedder(server, `http://localhost:${(server.address() as AddressInfo).port}`);
    server.on('request', (_req, res) => {
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(`<!doctype html><title>Product</title><iframe src="${embedder.src}" title="Webhooks portal"
        width="1100" height="800"></iframe>`);
    });
    return embedder;
  }

  /** Opens the product's page framing `src`; returns the frame. */
  async embed(page: Page, src: string): Promise<Frame> {
    this.src = src;
    await page.goto(`${this.origin}/`);
    const handle = await page.locator('iframe').elementHandle();
    return (await handle!.contentFrame())!;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('console portal links, embedded in another origin', () => {
  let t: TestApp;
  let api: Client;
  let baseUrl: string;
  let browser: Browser;
  let allowed: Embedder;
  let other: Embedder;
  let webhookId: string;
  const contexts: BrowserContext[] = [];

  async function openPage(): Promise<{ page: Page; messages: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    const page = await context.newPage();
    const messages: string[] = [];
    page.on('console', (message) => messages.push(message.text()));
    page.on('pageerror', (error) => messages.push(error.message));
    return { page, messages };
  }

  const usedAt = async (link: CreatedPortalLink): Promise<string | null> => {
    const { data } = (await api.get('/portal-links')).body as { data: { id: string; usedAt: string | null }[] };
    return data.find((l) => l.id === link.id)!.usedAt;
  };

  beforeAll(async () => {
    const [allowedPort, otherPort] = [await freePort(), await freePort()];
    t = await createTestApp({ PORTAL_FRAME_ANCESTORS: `http://localhost:${allowedPort}` });
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    allowed = await Embedder.start(allowedPort);
    other = await Embedder.start(otherPort);
    const { workspace, key } = await createWorkspace(t, 'Portal workspace');
    api = client(t, key);
    const calculator = await createCalculator(t, workspace.id, 'Mortgage calculator');
    webhookId = (
      await registerWebhook(api, {
        url: 'https://crm.example.com/hooks',
        name: 'CRM sync',
        calculators: [calculator.id],
      })
    ).id;
    browser = await launchChromium();
  });
  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await allowed?.close();
    await other?.close();
    await t?.close();
  });

  it('signs in by itself, shows the webhooks, and leaves the token in no URL', async () => {
    const link = await createPortalLink(api);
    const { page, messages } = await openPage();
    const frame = await allowed.embed(page, link.url);

    await frame.getByRole('heading', { name: 'Webhooks' }).waitFor();
    await frame.getByRole('link', { name: 'CRM sync', exact: true }).waitFor();
    expect(frame.url()).toBe(`${baseUrl}/console/#/webhooks`);
    expect(await frame.evaluate<string>('location.href')).not.toContain(tokenOf(link.url));
    await expect(frame.getByLabel('API key').count()).resolves.toBe(0);
    await frame.getByRole('button', { name: 'Register webhook' }).waitFor();
    expect(await usedAt(link)).not.toBeNull();
    expect(messages).toEqual([]);

    // Sign out forgets the session in this tab and offers no API-key form: the product hands out links.
    await frame.getByRole('button', { name: 'Sign out' }).click();
    await frame.getByRole('alert').filter({ hasText: 'Signed out' }).waitFor();
    await expect(frame.getByLabel('API key').count()).resolves.toBe(0);
  });

  it('read-only: hides the write controls, and the API refuses a write with 403', async () => {
    const link = await createPortalLink(api, { readOnly: true });
    const { page } = await openPage();
    const exchanged = page.waitForResponse((res) => res.url() === `${baseUrl}/api/v1/portal-sessions`);
    const frame = await allowed.embed(page, link.url);
    const { data: opened } = (await (await exchanged).json()) as { data: { token: string; readOnly: boolean } };
    expect(opened.readOnly).toBe(true);

    await frame.getByRole('link', { name: 'CRM sync', exact: true }).click();
    await frame.getByRole('heading', { name: 'Health' }).waitFor();
    await frame.getByText('read-only', { exact: true }).waitFor();
    for (const name of ['Disable', 'Send test event', 'Rotate secret', 'Recover', 'Remove']) {
      await expect(frame.getByRole('button', { name, exact: true }).count()).resolves.toBe(0);
    }
    await frame.getByRole('link', { name: '← Webhooks' }).click();
    await frame.getByRole('link', { name: 'CRM sync', exact: true }).waitFor();
    await expect(frame.getByRole('button', { name: 'Register webhook' }).count()).resolves.toBe(0);
    await expect(frame.getByRole('button', { name: 'Remove' }).count()).resolves.toBe(0);

    // The console's own session, for a write the page no longer offers.
    expectError(await sessionClient(t, opened.token).delete(`/webhooks/${webhookId}`), 403, 'forbidden');
    expect((await api.get(`/webhooks/${webhookId}`)).status).toBe(200);
  });

  it('opened a second time, says the link was used, with no sign-in form', async () => {
    const link = await createPortalLink(api);
    const first = await openPage();
    await (await allowed.embed(first.page, link.url)).getByRole('heading', { name: 'Webhooks' }).waitFor();
    const second = await openPage();
    const frame = await allowed.embed(second.page, link.url);
    await frame.getByRole('alert').filter({ hasText: 'already used' }).waitFor();
    await expect(frame.getByLabel('API key').count()).resolves.toBe(0);
  });

  it('is refused by the CSP in a page of an origin PORTAL_FRAME_ANCESTORS does not name', async () => {
    const link = await createPortalLink(api);
    const { page, messages } = await openPage();
    const response = page.waitForResponse((res) => res.url().startsWith(`${baseUrl}/console/`));
    const frame = await other.embed(page, link.url);
    expect((await response).headers()['content-security-policy']).toContain(`frame-ancestors ${allowed.origin}`);
    await waitFor(() => messages.find((m) => /violates .*"frame-ancestors .*blocked/.test(m)), 10_000, 'the refusal');
    await waitFor(() => frame.url().startsWith('chrome-error:'), 10_000, "the browser's error page in the frame");
    expect(await usedAt(link)).toBeNull(); // the console never ran there
  });
});
