import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { launchChromium, recordOffServerRequests } from '../support/browser.js';
import { createTestApp, createWorkspace, type TestApp } from '../support/test-app.js';

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
    browser = await launchChromium();
    page = await browser.newPage();
    recordOffServerRequests(page, baseUrl, offServer);
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
    // The API key's form; the other scheme is a portal session's.
    const apiKeyForm = page.locator('.auth-container form').filter({ hasText: 'x-ac-api-key' });
    await apiKeyForm.locator('input').fill(key);
    await apiKeyForm.locator('.auth-btn-wrapper .btn.authorize').click();
    await apiKeyForm.locator('.auth-btn-wrapper .btn-done').click();

    const operation = page.locator('#operations-workspace-getCurrentWorkspace');
    await operation.locator('.opblock-summary').first().click();
    await operation.locator('.try-out__btn').click();
    await operation.locator('.btn.execute').click();

    const response = operation.locator('.live-responses-table .response');
    await response.locator('.response-col_status', { hasText: '200' }).waitFor();
    await response.locator('.microlight, .highlight-code', { hasText: workspace.id }).first().waitFor();
    expect(await response.locator('.response-col_description').innerText()).toContain('Browser workspace');
  });

  it('shows the outgoing newSubmission webhook with its signature headers and the answers it acts on', async () => {
    const webhooks = page.locator('.webhooks');
    await webhooks.locator('h2', { hasText: 'Webhooks' }).waitFor({ state: 'visible' });
    const operation = webhooks.locator('#operations-webhooks-newSubmission');
    await operation.locator('.opblock-summary').first().click();

    const parameters = operation.locator('.parameters .parameter__name');
    await parameters.first().waitFor({ state: 'visible' });
    const names = (await parameters.allInnerTexts()).map((name) => name.replace(/\s*\*.*$/s, '').trim());
    expect(names.sort()).toEqual([
      'content-type',
      'user-agent',
      'webhook-id',
      'webhook-signature',
      'webhook-timestamp',
    ]);
    await operation.locator('.parameters', { hasText: 'v1,<new key> v1,<previous key>' }).waitFor();
    const statuses = await operation.locator('.responses-table .response .response-col_status').allInnerTexts();
    expect(statuses.map((status) => status.trim()).sort()).toEqual(['2XX', '410', '429', '503', 'default']);
    await operation.locator('.opblock-section-request-body', { hasText: '"event": "newSubmission"' }).waitFor();
  });

  it('loads nothing from outside this server', () => {
    expect(offServer).toEqual([]);
  });
});
