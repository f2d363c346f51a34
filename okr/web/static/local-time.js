// Progressive enhancement: each <time>'s hover text in the reader's own time zone and words.
// Without JavaScript the hover text is the exact UTC time the server wrote.
document.querySelectorAll("time[datetime]").forEach(function (time) {
  var moment = new Date(time.getAttribute("datetime"));
  if (!isNaN(moment)) {
    time.title = moment.toLocaleString(undefined, { dateStyle: "full", timeStyle: "long" });
  }
});
