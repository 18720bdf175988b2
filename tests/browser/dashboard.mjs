// The operator's journey in the dashboard, in headless Chromium: a wrong token answers the
// sign-in form again; sign in, read the counts, check the overview at a phone's width (no
// sideways scrolling, the Replay buttons in view), see a form posted from a page on another
// port refused, click Replay on one dead job, see it delivered once the destination is
// back, replay the destination's other dead job with its own button, see the empty
// sections say so; follow the conflict to its event; then search the events, open one,
// replay it from its page, read the destinations' charts (their scale labels whole) and the
// rejections, tab through the search form; the sending side: the applications, the second
// application seeded through /api/v1 with its endpoint, one of its messages with its
// attempt; the audit log (the replay, and the API's changes); a read session; every page
// at a phone's width and a desktop's, each checked with axe-core and pictured; sign out.
// Environment: ADMIN_URL (http://127.0.0.1:PORT), GATEWAY_URL, ADMIN_TOKEN, VIEWER_TOKEN,
// DEST_PORT, OTHER_APP, OTHER_ENDPOINT, OTHER_MESSAGE (the seeded application's ids).
import http from 'node:http';
import { DESKTOP, PHONE, accessible, fail, shoot as shootPage } from './common.mjs';

const { ADMIN_URL, GATEWAY_URL, ADMIN_TOKEN, DEST_PORT, OTHER_APP, OTHER_ENDPOINT, OTHER_MESSAGE } = process.env;
// The event page's address, from the events page's first link.
async function eventUrl(page) {
  await page.goto(`${ADMIN_URL}/admin/events?identity=msg_brow`);
  return `${ADMIN_URL}${await page.getAttribute('#events a', 'href')}`;
}

/** The operator's journey, in a fresh browser context of `browser`. */
export async function operator(browser, context) {
  const page = await context.newPage();
  // Checks the page with axe-core; `name` set, saves a full-page screenshot too.
  const shoot = (name, what = name) => shootPage(page, name, what);
  await page.goto(`${ADMIN_URL}/admin/`);
  if (!page.url().endsWith('/admin/login')) fail(`not sent to sign in: ${page.url()}`);
  await page.setViewportSize(DESKTOP);
  await shoot('sign-in-1280');
  await page.setViewportSize(PHONE);
  await shoot('sign-in-390');
  await page.setViewportSize(DESKTOP);

  // A wrong token: the sign-in form again, under the error, its field focused and empty.
  await page.fill('#token', 'not-the-token-typed');
  const wrong = page.waitForResponse((r) => r.url() === `${ADMIN_URL}/admin/login` && r.request().method() === 'POST');
  await page.click('#sign-in');
  if ((await wrong).status() !== 401) fail(`a wrong token was answered ${(await wrong).status()}`);
  await page.waitForSelector('#sign-in-error');
  if ((await page.textContent('#sign-in-error')).trim() !== 'Wrong token.') fail('the error is not said');
  if (await page.getAttribute('#sign-in-error', 'role') !== 'alert') fail('the error is not announced');
  if (await page.evaluate(() => document.activeElement.id) !== 'token') fail('the token field is not focused');
  if (await page.inputValue('#token') !== '') fail('the token field is not empty');
  if ((await page.content()).includes('not-the-token-typed')) fail('the page echoes the token typed');
  await shoot(null, 'the sign-in error');
  await page.fill('#token', ADMIN_TOKEN);
  await Promise.all([page.waitForURL(`${ADMIN_URL}/admin/`), page.click('#sign-in')]);

  const receipts = await page.textContent('tr[data-source="hooks"] .receipts');
  if (receipts.trim() !== '2') fail(`expected 2 receipts, the page says ${receipts}`);
  const dead = await page.locator('#dead tr').count() - 1;
  if (dead !== 2) fail(`expected 2 dead jobs, the page lists ${dead}`);
  if (!(await page.textContent('#dead')).includes('attempts exhausted')) fail('the dead job shows no reason');
  const appRow = 'tr[data-destination="app"]';
  if (await page.locator(`${appRow} button.retry`).count() !== 0) fail('"Retry waiting jobs now" with nothing waiting');
  if ((await page.textContent('#no-unmatched')).trim() !== 'No unmatched events.') fail('no word on unmatched');

  // A phone's width: the overview does not scroll sideways, and each row's buttons are in
  // view without scrolling inside its table.
  await page.setViewportSize(PHONE);
  await page.reload();
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  if (overflow > 0) fail(`the overview scrolls ${overflow} px sideways at 390 px`);
  for (const button of ['#dead button.replay', `${appRow} button.replay-dead`]) {
    const boxes = await page.locator(button).evaluateAll((all) => all.map((b) => {
      const r = b.getBoundingClientRect();
      return { left: r.left, right: r.right };
    }));
    if (boxes.length === 0) fail(`no ${button} at 390 px`);
    for (const box of boxes) {
      if (box.left < 0 || box.right > 390) fail(`${button} is out of view at 390 px: ${JSON.stringify(box)}`);
    }
  }
  await page.locator('#dead button.replay').first().scrollIntoViewIfNeeded();
  if (!(await page.locator('#dead button.replay').first().isVisible())) fail('the Replay button is hidden at 390 px');
  await shoot(null, 'the overview at 390 px');
  await page.setViewportSize(DESKTOP);

  // The destination comes back: a receiver that answers 204 after two seconds, so the
  // latency chart's scale reads four digits (the failed attempts took ~0 ms: the mean of
  // the three later successes and two failures is at least 1200 ms).
  let delivered = 0;
  const receiver = http.createServer((req, res) => {
    delivered += 1;
    req.resume();
    setTimeout(() => res.writeHead(204).end(), 2000);
  });
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
  if (await page.locator('#dead tr').count() !== 3) fail('a dead job is gone after the cross-origin form');

  // Replay one dead job from its row.
  const browserRow = page.locator('#dead tr', { hasText: 'msg_browser' });
  await Promise.all([page.waitForURL(`${ADMIN_URL}/admin/`), browserRow.locator('button.replay').click()]);
  const succeededJobs = async (n) => {
    for (let i = 0; i < 100; i += 1) {
      await page.waitForTimeout(100);
      await page.reload();
      const text = (await page.locator('tr[data-source="hooks"] .job-succeeded').allTextContents()).join('');
      if (text.trim() === `succeeded ${n}`) return true;
    }
    return false;
  };
  if (!(await succeededJobs(1))) fail('the replayed job never showed as succeeded');
  if (await page.locator('#dead tr').count() !== 2) fail('the replayed dead job is still listed');
  if (delivered < 1) fail('the destination received nothing');
  if (await page.locator(`${appRow} button.retry`).count() !== 0) fail('"Retry waiting jobs now" with nothing waiting');

  // Replay every dead job of the destination with its own button: it says what it did.
  const replayAll = page.locator(`${appRow} button.replay-dead`);
  if (!(await replayAll.textContent()).includes('Replay all 1 dead job(s) of app')) fail('no "Replay all dead jobs"');
  await Promise.all([page.waitForURL(/\/admin\/\?replayed=1&destination=app$/), replayAll.click()]);
  if ((await page.textContent('#done')).trim() !== 'Replayed 1 dead job(s) of app.') fail('no confirmation');
  if (!(await succeededJobs(2))) fail('the dead jobs replayed for the destination never succeeded');
  if ((await page.textContent('#no-dead')).trim() !== 'No dead jobs.') fail('the empty dead jobs say nothing');
  if (await page.locator(`${appRow} button.replay-dead`).count() !== 0) fail('"Replay all" with nothing dead');

  // A delivery without a signature: refused, and counted by reason.
  const refused = await fetch(`${GATEWAY_URL}/in/hooks`, { method: 'POST', body: '{}',
    headers: { 'content-type': 'application/json' } });
  if (refused.status !== 401) fail(`an unsigned delivery was answered ${refused.status}`);

  await page.goto(`${ADMIN_URL}/admin/`);
  await shoot(null, 'the overview');

  // The conflict (msg_browser's id with other bytes) links to its event, which lists it
  // by hash; the admin API lists it too.
  await Promise.all([page.waitForURL(/\/admin\/events\/\d+$/), page.click('#conflicts a')]);
  if (!(await page.textContent('#receipt')).includes('msg_browser')) fail('the conflict links elsewhere');
  if (!(await page.textContent('#conflict-summary')).includes('1 conflicting delivery')) fail('no conflict summary');
  const hash = (await page.textContent('#conflicts code')).trim();
  if (!/^[0-9a-f]{64}$/.test(hash)) fail(`the conflict shows no hash: ${hash}`);
  const api = await fetch(`${ADMIN_URL}/admin/v1/conflicts?source=hooks`,
    { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const listed = await api.json();
  if (api.status !== 200 || listed.conflicts.length !== 1 || listed.conflicts[0].body_sha256 !== hash
      || listed.conflicts[0].identity !== 'msg_browser') {
    fail(`the admin API lists ${JSON.stringify(listed)}`);
  }

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
  await shoot(null, 'the events search');

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
  await shoot(null, 'the event');

  // The destinations' charts: the failure before the destination came back, the successes.
  await page.click('nav a[href="/admin/destinations"]');
  await page.waitForURL(`${ADMIN_URL}/admin/destinations`);
  if (await page.locator('#dest-app svg').count() !== 4) fail('the destination has not its four charts');
  const summary = await page.textContent('tr[data-destination="app"]');
  if (await page.locator('#dest-app svg rect.bad').count() < 1) fail(`the failed attempt is not drawn: ${summary}`);
  if (await page.locator('#dest-app svg rect.good').count() < 1) fail('the successful attempts are not drawn');
  if (!(await page.textContent('tr[data-destination="app"]')).includes('attempts')) fail('no attempt summary');
  // Each chart's scale label lies whole inside its drawing, left of the plot.
  const scales = await page.locator('#dest-app svg').evaluateAll((svgs) => svgs.map((svg) => {
    const label = svg.querySelector('text');
    const box = label.getBBox();
    return { text: label.textContent, left: box.x, right: box.x + box.width,
             plot: Number(svg.querySelector('rect').getAttribute('x')) };
  }));
  if (!scales.some((s) => /^\d{4} ms$/.test(s.text))) fail(`no four-digit latency scale: ${JSON.stringify(scales)}`);
  for (const s of scales) {
    if (s.left < 0 || s.right > s.plot) fail(`the scale label "${s.text}" is cut: ${JSON.stringify(s)}`);
  }
  await shoot(null, 'the destinations');

  await page.click('nav a[href="/admin/rejections"]');
  await page.waitForURL(`${ADMIN_URL}/admin/rejections`);
  if (!(await page.textContent('#rejections')).includes('missing_header')) fail('the unsigned delivery is not counted');
  if (!(await page.textContent('#conflicts-by-source')).includes('hooks')) fail('the conflict is not counted');
  if (await page.locator('figure.conflicts svg rect.bad').count() < 1) fail('the conflict is not drawn');
  await shoot(null, 'the rejections');

  // The sending side: the applications seeded through /api/v1; the second one's page lists
  // its endpoint and its message; the message's page, its attempt at the endpoint (which
  // nobody answers: a failure).
  await page.click('nav a[href="/admin/applications"]');
  await page.waitForURL(`${ADMIN_URL}/admin/applications`);
  const applications = await page.textContent('#applications');
  if (!applications.includes('Globex Corporation') || !applications.includes('Initech')) {
    fail(`the applications page lists ${applications}`);
  }
  await Promise.all([page.waitForURL(`${ADMIN_URL}/admin/applications/${OTHER_APP}`),
    page.click(`tr[data-application="${OTHER_APP}"] a`)]);
  if (!(await page.textContent('#application')).includes('initech')) fail('the application page shows no uid');
  if (!(await page.textContent('#endpoints')).includes(OTHER_ENDPOINT)) fail('the application lists no endpoint');
  await shoot(null, 'an application');
  const messageUrl = `${ADMIN_URL}/admin/applications/${OTHER_APP}/messages/${OTHER_MESSAGE}`;
  await Promise.all([page.waitForURL(messageUrl), page.click(`tr[data-message="${OTHER_MESSAGE}"] a`)]);
  if (!(await page.textContent('#message')).includes('invoice.paid')) fail('the message page shows no event type');
  if (!(await page.textContent('#payload')).includes('in_2002')) fail('the message page shows no payload');
  for (let i = 0; i < 100 && await page.locator('#attempts').count() === 0; i += 1) {
    await page.waitForTimeout(100);
    await page.reload();
  }
  if (await page.locator('#attempts').count() === 0) fail('the message page never listed its failed attempt');
  await shoot(null, 'a message');

  // The audit log: the replay made from the event page, under the token's name.
  await page.click('nav a[href="/admin/audit"]');
  await page.waitForURL(`${ADMIN_URL}/admin/audit`);
  const audit = await page.textContent('#audit');
  if (!audit.includes('replay') || !audit.includes('admin') || !audit.includes('msg_browser')) {
    fail(`the audit log does not list the replay: ${audit}`);
  }
  if (!audit.includes('endpoint_create') || !audit.includes('provider')) {
    fail(`the audit log does not list the API's changes under the token's name: ${audit}`);
  }
  const auditRows = await page.locator('#audit tr').count() - 1;
  await shoot(null, 'the audit log');

  // A read token's session: it sees the event but no form that changes anything, and
  // the audit log gains nothing from it.
  const viewer = await (await browser.newContext()).newPage();
  await viewer.goto(`${ADMIN_URL}/admin/login`);
  await viewer.fill('#token', process.env.VIEWER_TOKEN);
  await Promise.all([viewer.waitForURL(`${ADMIN_URL}/admin/`), viewer.click('#sign-in')]);
  await viewer.goto(await eventUrl(viewer));
  if (!(await viewer.textContent('#receipt')).includes('msg_browser')) fail('a read session cannot see the event');
  await accessible(viewer, 'the event in a read session');
  if (await viewer.locator('#replay-submit').count() !== 0) fail('a read session is offered the replay form');
  await viewer.goto(`${ADMIN_URL}/admin/`);
  const forms = 'form[action="/admin/replay"], form[action="/admin/retry"], form[action="/admin/replay-dead"]';
  if (await viewer.locator(forms).count() !== 0) fail("a read session is offered the overview's forms");
  await viewer.goto(`${ADMIN_URL}/admin/destinations`);
  if (await viewer.locator('form').count() !== 1) fail('a read session is offered forms beside sign-out');
  await viewer.goto(`${ADMIN_URL}/admin/audit`);
  const rows = await viewer.locator('#audit tr').count() - 1;
  if (rows !== auditRows) fail(`the audit log had ${auditRows} entries, after the read session ${rows}`);
  await viewer.context().close();

  // A phone's width: no page scrolls sideways (table rows stack as cards).
  await page.setViewportSize(PHONE);
  const pages = ['/admin/', '/admin/events?identity=msg_brow', await eventUrl(page), '/admin/destinations',
    '/admin/rejections', '/admin/audit', '/admin/applications', `/admin/applications/${OTHER_APP}`, messageUrl];
  const names = ['overview', 'events', 'event', 'destinations', 'rejections', 'audit', 'applications', 'application',
    'message'];
  for (const [i, where] of pages.entries()) {
    await page.goto(where.startsWith('http') ? where : `${ADMIN_URL}${where}`);
    const wide = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    if (wide > 0) fail(`${where} scrolls ${wide} px sideways at 390 px`);
    await shoot(`${names[i]}-390`, `${where} at 390 px`);
  }
  // The same pages at a desktop's width, each checked and pictured.
  await page.setViewportSize(DESKTOP);
  for (const [i, where] of pages.entries()) {
    await page.goto(where.startsWith('http') ? where : `${ADMIN_URL}${where}`);
    await shoot(`${names[i]}-1280`, `${where} at 1280 px`);
  }
  receiver.close();

  await Promise.all([page.waitForURL(`${ADMIN_URL}/admin/login`), page.click('#sign-out')]);
  await page.goto(`${ADMIN_URL}/admin/`);
  if (!page.url().endsWith('/admin/login')) fail(`still signed in after signing out: ${page.url()}`);
}
