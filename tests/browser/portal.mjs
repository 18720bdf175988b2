// A customer's journey in the portal, in headless Chromium: the provider asks
// app-portal-access for a link; the customer opens it (the landing page's script posts the
// login) and lands on the endpoints, empty; adds an endpoint (a bad URL first: the form
// again, its error said) pointing to a recording server on loopback; reveals its secret;
// sends a test event and watches its attempt appear on the message page (its script
// updates the deliveries), the delivery signed with the revealed secret; rotates the secret (the revealed
// one changes); resends the message (a second attempt, signed with the new secret);
// browses the messages and the event types. Then the isolation cases: the second
// application's endpoint and message typed into the address bar, and its ids put into the
// customer's own forms, are 404 and change nothing; the used link opened again is 401;
// after signing out the next page is 401. Every page is checked with axe-core and pictured
// at 1280 px and 390 px (portal-*.png).
// Environment: GATEWAY_URL (the public listener, = [api] public_url), API_ADMIN_TOKEN,
// PORTAL_APP (the customer's application uid), OTHER_APP, OTHER_ENDPOINT, OTHER_MESSAGE
// (the second application's ids).
import crypto from 'node:crypto';
import http from 'node:http';
import { accessible, atBothWidths, fail } from './common.mjs';

const { GATEWAY_URL, API_ADMIN_TOKEN, PORTAL_APP, OTHER_APP, OTHER_ENDPOINT, OTHER_MESSAGE } = process.env;

/** `/api/v1` as the provider calls it, with the admin token: the answer's JSON. */
async function api(method, path, body) {
  const answer = await fetch(`${GATEWAY_URL}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${API_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!answer.ok) fail(`${method} /api/v1${path} answered ${answer.status}: ${await answer.text()}`);
  return answer.json();
}

/**
 * A receiver on loopback that answers 200 and keeps every request it got; after `hold()`
 * it keeps its answers back until `release()`, so a delivery stays under way.
 */
async function recorder() {
  const received = [];
  let held = null;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      received.push({ path: req.url, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (held) await held.promise;
      res.writeHead(200, { 'content-type': 'text/plain' }).end('thanks');
    });
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    server,
    received,
    url: `http://127.0.0.1:${server.address().port}/hook`,
    hold() {
      let release;
      const promise = new Promise((ok) => { release = ok; });
      held = { promise, release };
    },
    release() {
      if (held) held.release();
      held = null;
    },
  };
}

/** Whether `delivery` carries a Standard Webhooks signature made with `secret` (whsec_…). */
function signedWith(delivery, secret) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const { 'webhook-id': id, 'webhook-timestamp': ts, 'webhook-signature': signatures = '' } = delivery.headers;
  const expected = crypto.createHmac('sha256', key).update(`${id}.${ts}.${delivery.body}`).digest('base64');
  return signatures.split(' ').some((s) => s === `v1,${expected}`);
}

/** Waits until `check()` is true, for up to `seconds`; false if it never was. */
async function until(check, seconds = 15) {
  for (let i = 0; i < seconds * 10; i += 1) {
    if (await check()) return true;
    await new Promise((ok) => setTimeout(ok, 100));
  }
  return false;
}

/** The customer's journey, in a fresh browser context. */
export async function customer(browser, context) {
  const page = await context.newPage();
  const receiver = await recorder();
  try {
    await journey(page, receiver);
  } finally {
    receiver.server.close();
  }
}

async function journey(page, receiver) {
  const at = (path) => `${GATEWAY_URL}${path}`;
  // Every stylesheet and script a page asks for loads (the pages' own answers are checked
  // where they are opened).
  const broken = [];
  page.on('response', (r) => {
    if (r.status() >= 400 && !r.request().isNavigationRequest()) broken.push(`${r.status()} ${r.url()}`);
  });
  const whole = () => { if (broken.length) fail(`a page's resources did not load: ${broken.join(', ')}`); };
  // Opens `path`, expecting `status`.
  const open = async (path, status = 200) => {
    const answer = await page.goto(at(path));
    if (answer.status() !== status) fail(`${path} answered ${answer.status()}, not ${status}`);
  };
  // Submits the form `form` (a selector) by its submit button; waits for the answer.
  const submit = async (form) => {
    const posted = page.waitForResponse((r) => r.request().method() === 'POST' && r.request().isNavigationRequest());
    await page.locator(`${form} [type="submit"], ${form} button:not([type])`).first().click();
    const answer = await posted;
    await page.waitForLoadState('load');
    return answer;
  };
  // The one signing secret the page shows.
  const shownSecret = async () => {
    const shown = await page.$eval('main', (m) => [m.textContent, ...[...m.querySelectorAll('input')].map((i) => i.value)].join(' '));
    const found = shown.match(/whsec_[A-Za-z0-9+/=]+/g) || [];
    if (new Set(found).size !== 1) fail(`the page shows ${found.length} secrets, not one`);
    return found[0];
  };

  // The landing page, as a customer without scripts sees it (no fragment: nothing posted).
  await open('/portal/enter');
  if (await page.locator('form[action="/portal/enter"] input[name="token"]').count() !== 1) {
    fail('the landing page has no form to paste the login into');
  }
  await atBothWidths(page, 'portal-enter', 'the portal landing page');
  whole();

  // The provider's link; the browser opens it, the landing page's script posts it.
  const { url: link } = await api('POST', `/auth/app-portal-access/${PORTAL_APP}`, {});
  if (!link.startsWith(`${GATEWAY_URL}/portal/enter#`)) fail(`the link is ${link.split('#')[0]}#…`);
  // From another page, as a link opens (from the same one, only the fragment would change).
  await page.goto('about:blank');
  await Promise.all([page.waitForURL(at('/portal/endpoints')), page.goto(link)]);
  if ((await page.title()).indexOf('Acme Webhooks') < 0) fail(`the portal is not branded: ${await page.title()}`);
  if (page.url().includes('#')) fail('the login stays in the address bar');

  // No endpoint yet: the empty state says what to do, and offers to add one.
  if (await page.locator('main a[href^="/portal/endpoints/ep_"]').count() !== 0) fail('a new customer has endpoints');
  if (await page.locator('a[href="/portal/endpoints/new"]').count() < 1) fail('the empty endpoints offer no "add"');
  await atBothWidths(page, 'portal-endpoints-empty', 'the endpoints, none yet');

  // Add one: a URL the API would refuse first (the form again, the error tied to the field).
  await Promise.all([page.waitForURL(at('/portal/endpoints/new')), page.click('main a[href="/portal/endpoints/new"]')]);
  await atBothWidths(page, 'portal-endpoint-new', 'the new endpoint form');
  const form = 'form[action="/portal/endpoints"]';
  await page.fill(`${form} [name="url"]`, 'ftp://127.0.0.1/not-a-webhook');
  await page.fill(`${form} [name="description"]`, 'Our billing receiver');
  const refused = await submit(form);
  if (refused.status() !== 422) fail(`a bad URL was answered ${refused.status()}, not 422`);
  if (await page.getAttribute(`${form} [name="url"]`, 'aria-invalid') !== 'true') fail('the bad URL is not marked invalid');
  const errorId = (await page.getAttribute(`${form} [name="url"]`, 'aria-describedby')) || '';
  if (!errorId || !(await page.textContent(`#${errorId.split(' ')[0]}`)).trim()) fail('the bad URL has no error said');
  await atBothWidths(page, 'portal-endpoint-new-invalid', 'the new endpoint form, refused');
  if ((await api('GET', `/app/${PORTAL_APP}/endpoint`)).data.length !== 0) fail('a refused form made an endpoint');

  await page.fill(`${form} [name="url"]`, receiver.url);
  if ((await page.inputValue(`${form} [name="description"]`)) !== 'Our billing receiver') {
    fail('the refused form lost the description typed');
  }
  const created = await submit(form);
  if (created.status() !== 303 && created.status() !== 302) fail(`adding the endpoint was answered ${created.status()}`);
  const listed = (await api('GET', `/app/${PORTAL_APP}/endpoint`)).data;
  if (listed.length !== 1 || listed[0].url !== receiver.url) fail(`the API lists ${JSON.stringify(listed)}`);
  const endpoint = listed[0].id;
  const endpointPath = `/portal/endpoints/${endpoint}`;
  if (new URL(page.url()).pathname !== endpointPath) await open(endpointPath);
  if (!(await page.textContent('main')).includes(receiver.url)) fail('the endpoint page does not show its URL');
  if ((await page.textContent('main')).includes('whsec_')) fail('the secret is shown before it is asked for');
  await atBothWidths(page, 'portal-endpoint', 'an endpoint');

  // Reveal the signing secret: the API's own.
  const reveal = async () => {
    await Promise.all([page.waitForURL(at(`${endpointPath}/secret`)), page.click(`main a[href="${endpointPath}/secret"]`)]);
    return shownSecret();
  };
  const secret = await reveal();
  const stored = (await api('GET', `/app/${PORTAL_APP}/endpoint/${endpoint}/secret`)).key;
  if (secret !== stored) fail('the revealed secret is not the endpoint\'s');
  await atBothWidths(page, 'portal-endpoint-secret', 'an endpoint with its secret shown');

  // Send a test event: the message page shows the attempt once the worker made it (the
  // page's script updates its deliveries: the test does not reload it). The receiver holds
  // its answer first, so the page is seen while the delivery is under way.
  receiver.hold();
  await open(endpointPath);
  const testForm = `form[action="${endpointPath}/test"]`;
  if (await page.locator(testForm).count() !== 1) fail('the endpoint page has no test event form');
  const select = page.locator(`${testForm} select`);
  if (await select.count()) await select.first().selectOption('invoice.paid');
  await submit(testForm);
  if (!/\/portal\/messages\/msg_/.test(page.url())) {
    const to = page.locator('main a[href^="/portal/messages/msg_"]').first();
    if (await to.count() === 0) fail(`after the test event, ${page.url()} links to no message`);
    await Promise.all([page.waitForURL(/\/portal\/messages\/msg_/), to.click()]);
  }
  const messagePath = new URL(page.url()).pathname;
  const message = messagePath.split('/').pop();
  if (!(await until(() => receiver.received.length >= 1))) fail('the test event never reached the endpoint');
  const first = receiver.received[0];
  if (first.headers['webhook-id'] !== message) fail(`the delivery's webhook-id is ${first.headers['webhook-id']}, not ${message}`);
  if (JSON.parse(first.body).invoice !== 'in_1001') fail(`the test event is not the example: ${first.body}`);
  if (!signedWith(first, secret)) fail('the test event is not signed with the revealed secret');
  const attempts = () => page.$$eval('main table.attempts td[data-label="HTTP status"]',
    (cells) => cells.filter((c) => c.textContent.trim() === '200').length).catch(() => 0);
  const liveText = () => page.textContent('#live-text').catch(() => '');
  // Under way: no page reloads itself; the script offers to pause its updates.
  if (await page.locator('#live-pause').count() !== 1) fail('the message under way has no Pause updates button');
  await atBothWidths(page, 'portal-message-sending', 'a message being delivered');
  await page.click('#live-pause');
  if (!(await liveText()).includes('paused')) fail(`after Pause updates the status reads ${await liveText()}`);
  // Paused: the attempt is made and recorded, and the page stays as it was for two rounds.
  receiver.release();
  const recorded = async () => (await api('GET', `/app/${PORTAL_APP}/attempt/msg/${message}`)).data.length >= 1;
  if (!(await until(recorded))) fail('the attempt was never recorded');
  await page.waitForTimeout(6500);
  if ((await attempts()) !== 0) fail('the paused page was updated');
  // Resumed: the attempt appears without the test reloading, and the updates end.
  await page.click('#live-pause');
  if (!(await until(async () => (await attempts()) >= 1))) fail('the attempt never appeared on the message page');
  if (!(await until(async () => (await liveText()) === 'Every delivery is done.'))) {
    fail(`once delivered the status reads ${await liveText()}`);
  }
  if (await page.locator('#live-pause').count() !== 0) fail('the Pause updates button outlived the delivery');
  await atBothWidths(page, 'portal-message', 'a message with its attempt');

  // Rotate the secret: the revealed one changes, and it is the API's.
  await open(endpointPath);
  await submit(`form[action="${endpointPath}/secret/rotate"]`);
  const rotated = await reveal();
  if (rotated === secret) fail('the secret is the same after rotating it');
  if (rotated !== (await api('GET', `/app/${PORTAL_APP}/endpoint/${endpoint}/secret`)).key) {
    fail('the rotated secret shown is not the endpoint\'s');
  }

  // Resend the message: a second attempt, signed with the new secret.
  await open(messagePath);
  const resend = `form[action="${messagePath}/resend"]`;
  if (await page.locator(resend).count() < 1) fail('the message page has no resend form');
  await submit(resend);
  if (!(await until(() => receiver.received.length >= 2))) fail('the resent message never reached the endpoint');
  const second = receiver.received[1];
  if (second.headers['webhook-id'] !== message) fail('the resend is not the same message');
  if (!signedWith(second, rotated)) fail('the resend is not signed with the rotated secret');
  await open(messagePath);
  if (!(await until(async () => (await attempts()) >= 2))) fail('the second attempt never appeared on the message page');
  const apiAttempts = (await api('GET', `/app/${PORTAL_APP}/attempt/msg/${message}`)).data;
  if (apiAttempts.length !== 2) fail(`the API lists ${apiAttempts.length} attempts, not 2`);
  await atBothWidths(page, 'portal-message-resent', 'a message resent');

  // The endpoints, the messages, the event types.
  await open('/portal/endpoints');
  if (await page.locator(`main a[href="${endpointPath}"]`).count() < 1) fail('the endpoints page does not link the endpoint');
  await atBothWidths(page, 'portal-endpoints', 'the endpoints');
  await Promise.all([page.waitForURL(at('/portal/messages')), page.click('nav a[href="/portal/messages"]')]);
  if (await page.locator(`main a[href="${messagePath}"]`).count() < 1) fail('the messages page does not link the message');
  if ((await page.textContent('main')).includes(OTHER_MESSAGE)) fail('the messages page lists another application\'s');
  await atBothWidths(page, 'portal-messages', 'the messages');
  await Promise.all([page.waitForURL(at('/portal/event-types')), page.click('nav a[href="/portal/event-types"]')]);
  const catalog = await page.textContent('main');
  for (const name of ['invoice.paid', 'customer.created', 'in_1001', 'ada@example.com']) {
    if (!catalog.includes(name)) fail(`the event types page does not show ${name}`);
  }
  await atBothWidths(page, 'portal-event-types', 'the event types');

  // Isolation: the second application's ids typed into the address bar are 404 pages.
  for (const path of [`/portal/endpoints/${OTHER_ENDPOINT}`, `/portal/messages/${OTHER_MESSAGE}`,
    `/portal/endpoints/${OTHER_APP}`]) {
    await open(path, 404);
    await accessible(page, `${path} (another application's)`);
  }
  await open(`/portal/endpoints/${OTHER_ENDPOINT}`, 404);
  await atBothWidths(page, 'portal-not-found', 'the not found page');
  // ... and put into the customer's own forms (same session, CSRF token and origin): 404,
  // nothing changed.
  const otherSecret = (await api('GET', `/app/${OTHER_APP}/endpoint/${OTHER_ENDPOINT}/secret`)).key;
  const otherAttempts = (await api('GET', `/app/${OTHER_APP}/attempt/msg/${OTHER_MESSAGE}`)).data.length;
  const retarget = async (path, form, action) => {
    await open(path);
    await page.$eval(form, (f, to) => f.setAttribute('action', to), action);
    const answer = await submit(`form[action="${action}"]`);
    if (answer.status() !== 404) fail(`${action} from the customer's own form was answered ${answer.status()}`);
  };
  await retarget(endpointPath, `form[action="${endpointPath}/secret/rotate"]`,
    `/portal/endpoints/${OTHER_ENDPOINT}/secret/rotate`);
  await retarget(messagePath, resend, `/portal/messages/${OTHER_MESSAGE}/resend`);
  if ((await api('GET', `/app/${OTHER_APP}/endpoint/${OTHER_ENDPOINT}/secret`)).key !== otherSecret) {
    fail('another application\'s secret changed');
  }
  await new Promise((ok) => setTimeout(ok, 500));
  if ((await api('GET', `/app/${OTHER_APP}/attempt/msg/${OTHER_MESSAGE}`)).data.length !== otherAttempts) {
    fail('another application\'s message was sent again');
  }

  // The link used once: opened again, its login is refused (401).
  const reused = page.waitForResponse((r) => r.url() === at('/portal/enter') && r.request().method() === 'POST');
  await page.goto('about:blank');
  await page.goto(link);
  if ((await reused).status() !== 401) fail(`the used link was answered ${(await reused).status()}, not 401`);
  await page.waitForLoadState('load');
  await atBothWidths(page, 'portal-link-used', 'the used link');

  // Sign out: the session ends, the next page is 401.
  await open('/portal/endpoints');
  await Promise.all([page.waitForURL(at('/portal/signed-out')), page.click('form[action="/portal/sign-out"] button')]);
  await atBothWidths(page, 'portal-signed-out', 'signed out');
  await open('/portal/endpoints', 401);
  await accessible(page, 'a page after signing out');
  whole();
}
