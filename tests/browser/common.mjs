// What every journey of the browser test shares: launching Debian's Chromium, failing a
// journey with a message, checking a page with axe-core (a violation of impact serious or
// critical fails), and saving full-page screenshots at 1280 px and 390 px.
// Environment: CHROMIUM (the browser's path; default /usr/bin/chromium), SCREENSHOTS (a
// folder; default docs/screenshots).
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

// axe-core's script, evaluated in each page through the DevTools protocol (the pages' CSP
// allows no script of the test's, and the test does not loosen it).
const AXE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Where the screenshots go. */
export const SCREENSHOTS = process.env.SCREENSHOTS || 'docs/screenshots';

/** The widths every page is pictured at: a desktop's and a phone's. */
export const DESKTOP = { width: 1280, height: 720 };
export const PHONE = { width: 390, height: 844 };

/** A journey's failure: what the page did wrong, in words. */
export class JourneyFailure extends Error {}

/** Fails the running journey. */
export const fail = (message) => { throw new JourneyFailure(message); };

/** Every page state axe-core checked, and every screenshot saved, over all journeys. */
export const checked = new Set();
export const shots = [];

/** Headless Chromium, with nothing reaching outside this machine. */
export function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// Runs `step` on the page; a page that navigates (a redirect still landing) may do so in the
// middle of it: then waits for the new page and tries again.
async function steady(page, step) {
  for (let i = 0; ; i += 1) {
    try {
      return await step();
    } catch (err) {
      const navigated = /Execution context was destroyed|navigation|Target page, context or browser has been closed/i;
      if (i >= 4 || !navigated.test(String(err && err.message))) throw err;
      await page.waitForLoadState('load');
    }
  }
}

/** Runs axe-core on the page as it is now: fails on any serious or critical violation. */
export async function accessible(page, what) {
  const { violations } = await steady(page, async () => {
    if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(AXE);
    return page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  });
  const grave = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  for (const v of grave) {
    console.error(`axe ${v.impact} ${v.id} on ${what}: ${v.help}`);
    for (const node of v.nodes.slice(0, 5)) console.error(`  ${node.target.join(' ')}: ${node.failureSummary}`);
  }
  if (grave.length) fail(`${grave.length} serious or critical accessibility violation(s) on ${what}`);
  checked.add(what);
}

/** Checks the page with axe-core and, `name` set, saves a full-page screenshot `name`.png. */
export async function shoot(page, name, what = name) {
  await accessible(page, what);
  if (!name) return;
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, `${name}.png`);
  await steady(page, () => page.screenshot({ path: file, fullPage: true }));
  if (!shots.includes(file)) shots.push(file);
}

/**
 * The page as it is, at a desktop's width and at a phone's: checked by axe-core at each,
 * pictured as `name-1280.png` and `name-390.png`; at the phone's width it must not scroll
 * sideways. The page is not reloaded (a form's answer stays as it was), and is left at the
 * desktop's width.
 */
export async function atBothWidths(page, name, what = name) {
  await page.setViewportSize(DESKTOP);
  await shoot(page, `${name}-1280`, `${what} at 1280 px`);
  await page.setViewportSize(PHONE);
  const wide = await steady(page, () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth));
  if (wide > 0) fail(`${what} scrolls ${wide} px sideways at 390 px`);
  await shoot(page, `${name}-390`, `${what} at 390 px`);
  await page.setViewportSize(DESKTOP);
}
