// The dashboard end to end in headless Chromium: sign in, read the counts, see a form
// posted from a page on another port refused, click Replay on the dead job, see it
// delivered once the destination is back, and sign out.
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
  const context = await browser.newContext();
  const page = await context.newPage();
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

  // A page on another port of the same host posts a replay form: the browser sends the
  // SameSite=Strict cookie along (same site), the dashboard refuses it.
  const attacker = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end(
      `<form id="f" method="post" action="${ADMIN_URL}/admin/replay">` +
      '<input name="source" value="hooks"><input name="identity" value="msg_browser"></form>' +
      '<script>document.getElementById("f").submit()</script>');
  });
  await new Promise((ok) => attacker.listen(0, '127.0.0.1', ok));
  const evil = await context.newPage();
  const answered = evil.waitForResponse((r) => r.url() === `${ADMIN_URL}/admin/replay`);
  await evil.goto(`http://127.0.0.1:${attacker.address().port}/`);
  const status = (await answered).status();
  if (status !== 403) fail(`a cross-origin replay form was answered ${status}`);
  await evil.close();
  attacker.close();
  await page.waitForTimeout(500);
  if (delivered !== 0) fail('the cross-origin form replayed the job');
  await page.reload();
  if (await page.locator('#dead tr').count() !== 2) fail('the dead job is gone after the cross-origin form');

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

  await Promise.all([page.waitForURL(`${ADMIN_URL}/admin/login`), page.click('#sign-out')]);
  await page.goto(`${ADMIN_URL}/admin/`);
  if (!page.url().endsWith('/admin/login')) fail(`still signed in after signing out: ${page.url()}`);
  console.log('browser: 1 passed, 0 failed');
} finally {
  await browser.close();
}
