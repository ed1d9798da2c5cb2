import { chromium, type Browser, type Page } from 'playwright-core';

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

/** Debian's chromium, headless, with nothing of its own going to the network. */
export const launchChromium = (): Promise<Browser> =>
  chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });

/** Records every request a page makes to anything but `baseUrl` (data: URLs aside). */
export function recordOffServerRequests(page: Page, baseUrl: string, into: string[]): void {
  page.on('request', (request) => {
    if (!request.url().startsWith(`${baseUrl}/`) && !request.url().startsWith('data:')) into.push(request.url());
  });
}
