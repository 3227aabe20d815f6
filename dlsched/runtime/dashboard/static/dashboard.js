// dlsched dashboard: keep the page live by polling its ?fragment=1 every few seconds, and
// cancel jobs from the page. No framework, no build step.
"use strict";

const REFRESH_MS = 2000;
let busy = false;

function fragmentUrl() {
  const url = new URL(window.location.href);
  url.searchParams.set("fragment", "1");
  return url;
}

function say(text, bad) {
  const status = document.getElementById("live-status");
  if (status) {
    status.textContent = text;
    status.classList.toggle("bad", Boolean(bad));
  }
}

// 24-hour HH:MM:SS, as the page's other times (the chart's axis, the job pages' events);
// toLocaleTimeString() said "12:04:24 AM" in an en-US browser beside an axis at "00:04".
function clock(date) {
  return [date.getHours(), date.getMinutes(), date.getSeconds()]
    .map((part) => String(part).padStart(2, "0")).join(":");
}

// A log shows its end, as `dlsched logs` does, and stays where its reader scrolled it: the
// page opened at the log's first line, and each refresh put it back there.
function atEnd(log) {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 4;
}

function logPlaces(root) {
  return Array.from(root.querySelectorAll("pre.log"),
                    (log) => (atEnd(log) ? null : log.scrollTop));
}

function followLogs(root, places) {
  root.querySelectorAll("pre.log").forEach((log, i) => {
    const place = places ? places[i] : null;
    log.scrollTop = place == null ? log.scrollHeight : place;
  });
}

async function refresh() {
  const live = document.getElementById("live");
  if (!live || busy || document.hidden) return;
  busy = true;
  try {
    const answer = await fetch(fragmentUrl(), {credentials: "same-origin", cache: "no-store"});
    if (answer.status === 401) {
      window.location.href = "/login?next=" + encodeURIComponent(location.pathname + location.search);
      return;
    }
    if (!answer.ok) {
      say("update failed (" + answer.status + ")", true);
      return;
    }
    const logs = logPlaces(live);
    live.innerHTML = await answer.text();
    followLogs(live, logs);
    say("live, updated " + clock(new Date()));
  } catch (error) {
    say("service unreachable, retrying", true);
  } finally {
    busy = false;
  }
}

async function cancelJob(jobId, button) {
  if (!window.confirm("Cancel " + jobId + "? Its workers get SIGTERM, then SIGKILL.")) return;
  button.disabled = true;
  const answer = await fetch("/ui/jobs/" + encodeURIComponent(jobId) + "/cancel", {
    method: "POST", credentials: "same-origin", headers: {"X-Dlsched-Dashboard": "1"}});
  if (!answer.ok) {
    let detail = answer.statusText;
    try { detail = (await answer.json()).detail; } catch (error) { /* not JSON */ }
    say("cancel " + jobId + ": " + detail, true);
    button.disabled = false;
    return;
  }
  say(jobId + " cancelled");
  await refresh();
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-cancel]");
  if (button) {
    event.preventDefault();
    cancelJob(button.dataset.cancel, button);
  }
});

followLogs(document, null);

if (document.getElementById("live")) {
  say("live");
  window.setInterval(refresh, REFRESH_MS);
  document.addEventListener("visibilitychange", refresh);
}
