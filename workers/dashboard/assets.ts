/**
 * The dashboard's files (workers/dashboard-ui/), bundled into the Worker as
 * text by wrangler.toml's [[rules]], by the path each is served at. Static:
 * none of them holds cluster data, so serving them takes no token.
 */
import api from "../dashboard-ui/api.js";
import app from "../dashboard-ui/app.js";
import css from "../dashboard-ui/dashboard.css";
import favicon from "../dashboard-ui/favicon.svg";
import html from "../dashboard-ui/index.html";
import series from "../dashboard-ui/series.js";
import session from "../dashboard-ui/session.js";
import sparkline from "../dashboard-ui/sparkline.js";
import view from "../dashboard-ui/view.js";

export const DASHBOARD_PATH = "/admin/ui";

export interface Asset {
  body: string;
  contentType: string;
}

const HTML = "text/html; charset=utf-8";
const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";
const SVG = "image/svg+xml; charset=utf-8";

const page: Asset = { body: html, contentType: HTML };

/** Both `/admin/ui` and `/admin/ui/` are the page; it names its files by absolute path. */
export const ASSETS: ReadonlyMap<string, Asset> = new Map([
  [DASHBOARD_PATH, page],
  [`${DASHBOARD_PATH}/`, page],
  [`${DASHBOARD_PATH}/dashboard.css`, { body: css, contentType: CSS }],
  [`${DASHBOARD_PATH}/favicon.svg`, { body: favicon, contentType: SVG }],
  [`${DASHBOARD_PATH}/app.js`, { body: app, contentType: JS }],
  [`${DASHBOARD_PATH}/api.js`, { body: api, contentType: JS }],
  [`${DASHBOARD_PATH}/series.js`, { body: series, contentType: JS }],
  [`${DASHBOARD_PATH}/session.js`, { body: session, contentType: JS }],
  [`${DASHBOARD_PATH}/sparkline.js`, { body: sparkline, contentType: JS }],
  [`${DASHBOARD_PATH}/view.js`, { body: view, contentType: JS }],
]);
