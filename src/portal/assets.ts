/**
 * The portal's stylesheet and script, served as files of the portal (the CSP allows no inline
 * style or script). The pages work without either: the script only adds the copy button.
 * Colours: text #1b1f24 on #ffffff (16:1), links #0b57d0 (6.6:1), muted #545b64 (6.9:1),
 * white on the buttons' #0b57d0 (6.6:1) and #b3261e (6.5:1): above WCAG 2.2's 4.5:1 (AA).
 */
export const PORTAL_CSS = `*,*::before,*::after{box-sizing:border-box}
html{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;line-height:1.5;color:#1b1f24;background:#fff}
body{margin:0}
a{color:#0b57d0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.skip{position:absolute;left:-10000px}
.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:1}
.bar{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center;justify-content:space-between;padding:.75rem 1rem;border-bottom:1px solid #d0d7de}
.brand{font-weight:600;text-decoration:none;color:#1b1f24}
.account{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}
.account form{margin:0}
main{max-width:72rem;margin:0 auto;padding:1rem}
main:focus{outline:none}
h1{font-size:1.5rem;margin:.5rem 0 1rem}
.stack{display:flex;flex-direction:column;gap:.5rem;max-width:28rem}
input[type=text],input[type=password],select{font:inherit;padding:.5rem;border:1px solid #545b64;border-radius:4px;width:100%}
fieldset{border:1px solid #d0d7de;border-radius:4px;padding:.5rem 1rem}
.check{display:flex;gap:.5rem;align-items:center;margin:.25rem 0}
.check input{width:1.25rem;height:1.25rem}
button,.button{font:inherit;display:inline-block;padding:.5rem 1rem;border:1px solid #0b57d0;border-radius:4px;background:#0b57d0;color:#fff;text-decoration:none;cursor:pointer;min-height:2.75rem}
button.secondary,.button.secondary{background:#fff;color:#0b57d0}
button.danger{background:#b3261e;border-color:#b3261e}
:focus-visible{outline:3px solid #1b1f24;outline-offset:2px}
.error{color:#b3261e;font-weight:600}
.warning{border-left:4px solid #b3261e;background:#fdecea;padding:.5rem 1rem}
.notice{border-left:4px solid #0b57d0;background:#e8f0fe;padding:.5rem 1rem}
.muted{color:#545b64}
.secret{display:inline-block;padding:.25rem .5rem;background:#f6f8fa;border:1px solid #d0d7de;border-radius:4px;user-select:all}
.pair{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}
.pair dd{margin:0}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.5rem;border-bottom:1px solid #d0d7de;vertical-align:top}
.status{font-weight:600}
.status-revoked,.status-expired{color:#545b64}
.ending-soon{display:block;color:#b3261e}
.pager{display:flex;gap:1rem;margin-top:1rem}
.visually-hidden{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
@media (max-width:40rem){
  thead{position:absolute;left:-10000px}
  table,tbody,tr,td{display:block;width:100%}
  tr{border:1px solid #d0d7de;border-radius:4px;margin-bottom:.75rem}
  td{border:0;display:grid;grid-template-columns:7rem 1fr;gap:.5rem}
  td::before{content:attr(data-label);font-weight:600}
}
`;

/**
 * Progressive enhancement: shows each `data-copy` button and copies the text of the element it
 * names with the Clipboard API. Without script (or clipboard), the text stays selectable.
 */
export const PORTAL_JS = `"use strict";
document.addEventListener('DOMContentLoaded', function () {
  var buttons = document.querySelectorAll('button[data-copy]');
  buttons.forEach(function (button) {
    var target = document.getElementById(button.getAttribute('data-copy'));
    var status = document.getElementById('copy-status');
    if (!target || !navigator.clipboard) return;
    button.hidden = false;
    button.addEventListener('click', function () {
      navigator.clipboard.writeText(target.textContent).then(
        function () { if (status) status.textContent = 'Copied.'; },
        function () { if (status) status.textContent = 'Copying failed: select the text and copy it.'; }
      );
    });
  });
});
`;
