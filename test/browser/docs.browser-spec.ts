import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-component-update',
  '--disable-sync',
];

const SPEC_OPERATIONS: [method: string, path: string][] = [
  ['get', '/webhooks'],
  ['post', '/webhooks'],
  ['get', '/webhooks/{webhookId}'],
  ['delete', '/webhooks/{webhookId}'],
  ['get', '/calculators'],
  ['get', '/me'],
];

describe('API reference page /api/v1/docs', () => {
  let t: TestApp;
  let browser: Browser;
  let page: Page;
  let baseUrl: string;
  const offServer: string[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    page = await browser.newPage();
    page.on('request', (request) => {
      if (!request.url().startsWith(`${baseUrl}/`) && !request.url().startsWith('data:')) offServer.push(request.url());
    });
    await page.goto(`${baseUrl}/api/v1/docs`);
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('lists the six spec operations', async () => {
    for (const [method, path] of SPEC_OPERATIONS) {
      await page.locator(`.opblock-${method} .opblock-summary-path[data-path="${path}"]`).waitFor({ state: 'visible' });
    }
  });

  it('tries out GET /me with a key: 200 and the workspace in the page', async () => {
    const { workspace, key } = await createWorkspace(t, 'Browser workspace');

    await page.locator('.auth-wrapper .btn.authorize').click();
    await page.locator('.auth-container input').fill(key);
    await page.locator('.auth-btn-wrapper .btn.authorize').click();
    await page.locator('.auth-btn-wrapper .btn-done').click();

    const operation = page.locator('#operations-workspace-getCurrentWorkspace');
    await operation.locator('.opblock-summary').first().click();
    await operation.locator('.try-out__btn').click();
    await operation.locator('.btn.execute').click();

    const response = operation.locator('.live-responses-table .response');
    await response.locator('.response-col_status', { hasText: '200' }).waitFor();
    await response.locator('.microlight, .highlight-code', { hasText: workspace.id }).first().waitFor();
    expect(await response.locator('.response-col_description').innerText()).toContain('Browser workspace');
  });

  it('loads nothing from outside this server', () => {
    expect(offServer).toEqual([]);
  });
});
