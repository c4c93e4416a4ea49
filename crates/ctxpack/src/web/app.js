// ctxpack web view: the only script a page runs (the Content-Security-Policy allows no other).
// It copies a pack's Markdown; every page works without it otherwise.
"use strict";
document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-copy]");
  if (!button) return;
  const source = document.getElementById(button.dataset.copy);
  if (!source) return;
  const done = () => {
    button.textContent = "Copied";
    button.classList.add("done");
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(source.value).then(done, () => {
      source.select();
      document.execCommand("copy");
      done();
    });
  } else {
    source.select();
    document.execCommand("copy");
    done();
  }
});
