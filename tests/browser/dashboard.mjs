// The dashboard end to end in headless Chromium: sign in, read the counts, click Replay on
// the dead job, and see it delivered once the destination is back.
// Environment: ADMIN_URL (http://127.0.0.1:PORT), ADMIN_TOKEN, DEST_PORT, SCREENSHOT.
import http from 'node:http';
import { chromium } from 'playwright-core';

const { ADMIN_URL, ADMIN_TOKEN, DEST_PORT, SCREENSHOT } = process.env;
const fail = (message) => { console.error(`browser test: ${message}`); process.exit(1); };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage();
  await page.goto(`${ADMIN_URL}/admin/`);
  if (!page.url().endsWith('/admin/login')) fail(`not sent to sign in: ${page.url()}`);
  await page.fill('#token', ADMIN_TOKEN);
  await Promise.all([page.waitForURL(`${ADMIN_URL}/admin/`), page.click('#sign-in')]);

  const receipts = await page.textContent('tr[data-source="hooks"] .receipts');
  if (receipts.trim() !== '1') fail(`expected 1 receipt, the page says ${receipts}`);
  const dead = await page.locator('#dead tr').count() - 1;
  if (dead !== 1) fail(`expected 1 dead job, the page lists ${dead}`);
  if (!(await page.textContent('#dead')).includes('attempts exhausted')) fail('the dead job shows no reason');

  // The destination comes back: a receiver that answers 204.
  let delivered = 0;
  const receiver = http.createServer((req, res) => { delivered += 1; req.resume(); res.writeHead(204).end(); });
  await new Promise((ok) => receiver.listen(Number(DEST_PORT), '127.0.0.1', ok));

  await Promise.all([page.waitForURL(`${ADMIN_URL}/admin/`), page.click('#dead button.replay')]);
  let succeeded = false;
  for (let i = 0; i < 100 && !succeeded; i += 1) {
    await page.waitForTimeout(100);
    await page.reload();
    succeeded = (await page.locator('tr[data-source="hooks"] .job-succeeded').count()) === 1;
  }
  if (!succeeded) fail('the replayed job never showed as succeeded');
  if (await page.locator('#dead tr').count() !== 1) fail('the dead job is still listed');
  if (delivered < 1) fail('the destination received nothing');
  if (SCREENSHOT) await page.screenshot({ path: SCREENSHOT, fullPage: true });
  receiver.close();
  console.log('browser: 1 passed, 0 failed');
} finally {
  await browser.close();
}
