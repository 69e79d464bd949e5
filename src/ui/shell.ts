/**
 * The page `/ui/` serves: no data and no inline script (the CSP forbids it), only the links to
 * the app's script and styles and a message for browsers without JavaScript.
 */
export function shellHtml(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>quartermaster</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="./app.css">
<script type="module" src="./app.js"></script>
</head>
<body>
<div id="app"><noscript>The quartermaster dashboard needs JavaScript.</noscript></div>
</body>
</html>
`;
}
