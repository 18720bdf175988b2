// The dashboard end to end in headless Chromium: sign in, read the counts, see a form
// posted from a page on another port refused, click Replay on the dead job, see it
// delivered once the destination is back; then search the events, open one, replay it
// from its page, read the destinations' charts and the rejections, tab through the
// search form, check every page at a phone's width, save a full-page screenshot of each
// page, and sign out.
// Environment: ADMIN_URL (http://127.0.0.1:PORT), GATEWAY_URL, ADMIN_TOKEN, DEST_PORT,
// SCREENSHOTS (a folder; default tests/browser/screenshots).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { chromium } from 'playwright-core';

const { ADMIN_URL, GATEWAY_URL, ADMIN_TOKEN, DEST_PORT } = process.env;
const SCREENSHOTS = process.env.SCREENSHOTS || 'tests/browser/screenshots';
// The event page's address, from the events page's first link.
async function eventUrl(page) {
  await page.goto(`${ADMIN_URL}/admin/events?identity=msg_brow`);
  return `${ADMIN_URL}${await page.getAttribute('#events a', 'href')}`;
}
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

  // A delivery without a signature: refused, and counted by reason.
  const refused = await fetch(`${GATEWAY_URL}/in/hooks`, { method: 'POST', body: '{}',
    headers: { 'content-type': 'application/json' } });
  if (refused.status !== 401) fail(`an unsigned delivery was answered ${refused.status}`);

  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const shots = [];
  const shoot = async (name) => {
    const file = path.join(SCREENSHOTS, `${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    shots.push(file);
  };
  await page.reload();
  await shoot('overview');

  // The events page: every field labelled, reachable by Tab in order, a search by identity.
  await page.click('nav a[href="/admin/events"]');
  await page.waitForURL(`${ADMIN_URL}/admin/events`);
  const unlabelled = await page.$$eval('#search input, #search select',
    (fields) => fields.filter((f) => f.labels.length === 0).map((f) => f.name));
  if (unlabelled.length) fail(`search fields without a label: ${unlabelled}`);
  await page.focus('#q-source');
  const order = ['q-source'];
  for (let i = 0; i < 7; i += 1) {
    await page.keyboard.press('Tab');
    order.push(await page.evaluate(() => document.activeElement.id));
  }
  const expected = ['q-source', 'q-identity', 'q-type', 'q-state', 'q-destination', 'q-since', 'q-until',
    'search-submit'];
  if (order.join() !== expected.join()) fail(`Tab goes ${order}, not ${expected}`);
  await page.focus('#q-identity');
  await page.keyboard.type('msg_brow');
  await page.selectOption('#q-state', 'succeeded');
  await page.fill('#q-type', 't');
  await page.fill('#q-since', '1h');
  await Promise.all([page.waitForURL(/\/admin\/events\?/), page.keyboard.press('Enter')]);
  if (await page.locator('#events tr[data-id]').count() !== 1) fail('the search does not find the one event');
  await shoot('events');

  // Its page: receipt, payload, the attempts; replay its succeeded job from there.
  await Promise.all([page.waitForURL(/\/admin\/events\/\d+$/), page.click('#events a')]);
  if (!(await page.textContent('#receipt')).includes('msg_browser')) fail('the event page has no receipt');
  if (!(await page.textContent('#payload')).includes('"type": "t"')) fail('the payload is not shown re-indented');
  if (!(await page.textContent('#payload')).includes('"<b>"')) fail('the payload is not escaped text');
  if (!(await page.textContent('#headers')).includes('browser-1')) fail('the stored header is not shown');
  const attempts = await page.locator('#attempts tr').count() - 1;
  if (attempts < 2) fail(`expected the failed and the replayed attempt, the page lists ${attempts}`);
  const before = delivered;
  await page.selectOption('#replay-state', 'succeeded');
  await Promise.all([page.waitForURL(/replayed=1$/), page.click('#replay-submit')]);
  if (!(await page.textContent('#done')).includes('Replayed 1')) fail('the replay from the event page did nothing');
  for (let i = 0; i < 100 && delivered === before; i += 1) await page.waitForTimeout(100);
  if (delivered === before) fail('the replay from the event page was not delivered');
  for (let i = 0; i < 100; i += 1) {
    await page.reload();
    if (await page.locator('#attempts tr').count() - 1 > attempts) break;
    await page.waitForTimeout(100);
  }
  await shoot('event');

  // The destinations' charts: the failure before the destination came back, the successes.
  await page.click('nav a[href="/admin/destinations"]');
  await page.waitForURL(`${ADMIN_URL}/admin/destinations`);
  if (await page.locator('#dest-app svg').count() !== 4) fail('the destination has not its four charts');
  const summary = await page.textContent('tr[data-destination="app"]');
  if (await page.locator('#dest-app svg rect.bad').count() < 1) fail(`the failed attempt is not drawn: ${summary}`);
  if (await page.locator('#dest-app svg rect.good').count() < 1) fail('the successful attempts are not drawn');
  if (!(await page.textContent('tr[data-destination="app"]')).includes('attempts')) fail('no attempt summary');
  await shoot('destinations');

  await page.click('nav a[href="/admin/rejections"]');
  await page.waitForURL(`${ADMIN_URL}/admin/rejections`);
  if (!(await page.textContent('#rejections')).includes('missing_header')) fail('the unsigned delivery is not counted');
  if (!(await page.textContent('#conflicts-by-source')).includes('hooks')) fail('the conflict is not counted');
  if (await page.locator('figure.conflicts svg rect.bad').count() < 1) fail('the conflict is not drawn');
  await shoot('rejections');

  // The audit log: the replay made from the event page, under the token's name.
  await page.click('nav a[href="/admin/audit"]');
  await page.waitForURL(`${ADMIN_URL}/admin/audit`);
  const audit = await page.textContent('#audit');
  if (!audit.includes('replay') || !audit.includes('admin') || !audit.includes('msg_browser')) {
    fail(`the audit log does not list the replay: ${audit}`);
  }
  const auditRows = await page.locator('#audit tr').count() - 1;
  await shoot('audit');

  // A read token's session: it sees the event but no form that changes anything, and
  // the audit log gains nothing from it.
  const viewer = await (await browser.newContext()).newPage();
  await viewer.goto(`${ADMIN_URL}/admin/login`);
  await viewer.fill('#token', process.env.VIEWER_TOKEN);
  await Promise.all([viewer.waitForURL(`${ADMIN_URL}/admin/`), viewer.click('#sign-in')]);
  await viewer.goto(await eventUrl(viewer));
  if (!(await viewer.textContent('#receipt')).includes('msg_browser')) fail('a read session cannot see the event');
  if (await viewer.locator('#replay-submit').count() !== 0) fail('a read session is offered the replay form');
  await viewer.goto(`${ADMIN_URL}/admin/`);
  if (await viewer.locator('form[action="/admin/replay"], form[action="/admin/retry"]').count() !== 0) {
    fail("a read session is offered the overview's forms");
  }
  await viewer.goto(`${ADMIN_URL}/admin/audit`);
  const rows = await viewer.locator('#audit tr').count() - 1;
  if (rows !== auditRows) fail(`the audit log had ${auditRows} entries, after the read session ${rows}`);
  await viewer.context().close();

  // A phone's width: no page scrolls sideways (tables scroll in their own box).
  await page.setViewportSize({ width: 390, height: 844 });
  const pages = ['/admin/', '/admin/events?identity=msg_brow', await eventUrl(page), '/admin/destinations',
    '/admin/rejections', '/admin/audit'];
  for (const where of pages) {
    await page.goto(where.startsWith('http') ? where : `${ADMIN_URL}${where}`);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    if (wide > 0) fail(`${where} scrolls ${wide} px sideways at 390 px`);
  }
  await page.goto(`${ADMIN_URL}/admin/destinations`);
  await shoot('destinations-narrow');
  receiver.close();

  await Promise.all([page.waitForURL(`${ADMIN_URL}/admin/login`), page.click('#sign-out')]);
  await page.goto(`${ADMIN_URL}/admin/`);
  if (!page.url().endsWith('/admin/login')) fail(`still signed in after signing out: ${page.url()}`);
  for (const file of shots) console.log(`screenshot: ${file}`);
  console.log('browser: 1 passed, 0 failed');
} finally {
  await browser.close();
}
