// dyno serve, /live: replace the panel with each one the server pushes. The panel is
// rendered and escaped on the server; without this script the page reloads itself.
(function () {
  "use strict";
  var panel = document.getElementById("live");
  var state = document.getElementById("live-state");
  if (!panel || !window.EventSource) {
    return;
  }
  var source = new EventSource("/live/events");
  source.addEventListener("panel", function (e) {
    panel.innerHTML = e.data;
    if (state) {
      state.textContent = "live";
    }
  });
  source.onerror = function () {
    if (state) {
      state.textContent = "reconnecting…";
    }
  };
})();
