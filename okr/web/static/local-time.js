// Progressive enhancement: each <time>'s hover text in the reader's own time zone and words.
// Without JavaScript the exact UTC time stays in the datetime attribute (and, on a key result's page, the hover text).
document.querySelectorAll("time[datetime]").forEach(function (time) {
  var moment = new Date(time.getAttribute("datetime"));
  if (!isNaN(moment)) {
    time.title = moment.toLocaleString(undefined, { dateStyle: "full", timeStyle: "long" });
  }
});
