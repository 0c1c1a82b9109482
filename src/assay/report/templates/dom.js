// Shared by the report and the run browser: build DOM nodes with text set as text, never as markup.
function assayEl(tag, props) {
  var node = document.createElement(tag);
  if (props) {
    for (var key in props) {
      if (key === "text") node.textContent = props.text;
      else if (key === "cls") node.className = props.cls;
      else node[key] = props[key];
    }
  }
  for (var i = 2; i < arguments.length; i++) {
    var child = arguments[i];
    if (child === null || child === undefined) continue;
    node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}
