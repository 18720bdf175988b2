// The browser test's journeys, one after the other in one headless Chromium: the
// operator's in the dashboard (dashboard.mjs), then a customer's in the portal
// (portal.mjs). A journey that fails is reported and the next still runs; the summary
// says which passed, and the exit status is 1 when any failed.
import { JourneyFailure, checked, launch, shots } from './common.mjs';
import { operator } from './dashboard.mjs';
import { customer } from './portal.mjs';

const journeys = [['operator (dashboard)', operator], ['customer (portal)', customer]];
const browser = await launch();
const failed = [];
try {
  for (const [name, journey] of journeys) {
    const context = await browser.newContext();
    try {
      await journey(browser, context);
      console.log(`journey ${name}: passed`);
    } catch (err) {
      failed.push(name);
      const why = err instanceof JourneyFailure ? err.message : (err && err.stack) || String(err);
      console.error(`journey ${name}: FAILED: ${why}`);
    } finally {
      await context.close();
    }
  }
} finally {
  await browser.close();
}
for (const file of shots) console.log(`screenshot: ${file}`);
console.log(`axe-core: ${checked.size} page states checked, none with a serious or critical violation`);
console.log(`browser: ${journeys.length - failed.length} passed, ${failed.length} failed${
  failed.length ? ` (${failed.join(', ')})` : ''}`);
process.exit(failed.length ? 1 : 0);
