// The message page while a delivery is under way: every few seconds it reads the page again
// and puts the new deliveries (`#deliveries`) in place of the shown ones, until none is under
// way. A button pauses it; it also waits while the focus is inside the deliveries (on a
// Resend button), so nothing moves under the reader. The status line says what changed.
(function () {
  'use strict';
  var region = document.getElementById('deliveries');
  var text = document.getElementById('live-text');
  var reload = document.getElementById('live-reload');
  if (!region || !region.dataset.live || !text || !reload) return;
  var every = Number(region.dataset.live) * 1000;
  var paused = false;
  var pause = document.createElement('button');
  pause.type = 'button';
  pause.id = 'live-pause';
  pause.textContent = 'Pause updates';
  pause.addEventListener('click', function () {
    paused = !paused;
    pause.textContent = paused ? 'Resume updates' : 'Pause updates';
    text.textContent = paused ? 'Updates paused.' : 'A delivery is under way: updating every ' + every / 1000 + ' seconds.';
  });
  text.textContent = 'A delivery is under way: updating every ' + every / 1000 + ' seconds.';
  reload.replaceWith(pause);

  function stop(words) {
    text.textContent = words;
    pause.remove();
  }
  function tick() {
    if (paused || region.contains(document.activeElement)) {
      setTimeout(tick, every);
      return;
    }
    fetch(location.pathname, { credentials: 'same-origin', headers: { Accept: 'text/html' } })
      .then(function (answer) {
        if (!answer.ok) throw new Error(String(answer.status));
        return answer.text();
      })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, 'text/html').getElementById('deliveries');
        if (!fresh) throw new Error('no deliveries');
        region.replaceChildren.apply(region, Array.prototype.slice.call(fresh.childNodes));
        if (fresh.dataset.live) {
          setTimeout(tick, every);
        } else {
          delete region.dataset.live;
          stop('Every delivery is done.');
        }
      })
      .catch(function () {
        stop('Updates stopped: the page could not be read. Reload it to see the latest.');
      });
  }
  setTimeout(tick, every);
})();
