/**
 * The dashboard's files, imported as text (wrangler.toml's [[rules]] bundle
 * them so, and the test pool reads the same rules). Each file is named on its
 * own: a pattern for every `.js` would type any missing module as a string.
 */
declare module "*/dashboard-ui/index.html" {
  const text: string;
  export default text;
}
declare module "*/dashboard-ui/dashboard.css" {
  const text: string;
  export default text;
}
declare module "*/dashboard-ui/favicon.svg" {
  const text: string;
  export default text;
}
declare module "*/dashboard-ui/api.js" {
  const text: string;
  export default text;
}
declare module "*/dashboard-ui/app.js" {
  const text: string;
  export default text;
}
declare module "*/dashboard-ui/series.js" {
  const text: string;
  export default text;
}
declare module "*/dashboard-ui/session.js" {
  const text: string;
  export default text;
}
declare module "*/dashboard-ui/sparkline.js" {
  const text: string;
  export default text;
}
declare module "*/dashboard-ui/view.js" {
  const text: string;
  export default text;
}
