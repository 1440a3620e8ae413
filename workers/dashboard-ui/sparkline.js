// @ts-check
/**
 * Sparklines drawn as SVG paths: a few dozen points a second need no chart
 * library, and elements built through the DOM need no inline style or script,
 * which the page's Content-Security-Policy forbids.
 */

const SVG = "http://www.w3.org/2000/svg";

/** @typedef {import("./series.js").Point} Point */

/**
 * The path of each run of points without a gap, scaled into width x height
 * (y grows downwards; 0 sits on the bottom edge).
 * @param {Point[]} points oldest first
 * @param {{ width: number, height: number, span: number, max: number }} box
 *   `span`: the time the width shows (ms), ending at the last point
 * @returns {string[]} SVG path data, one per run
 */
export function sparkPaths(points, box) {
  const end = points.at(-1)?.t ?? 0;
  const x = (/** @type {number} */ t) => box.width - ((end - t) / box.span) * box.width;
  const y = (/** @type {number} */ v) => box.height - (Math.min(v, box.max) / box.max) * box.height;
  /** @type {string[]} */
  const paths = [];
  let run = "";
  for (const point of points) {
    if (point.v === null || end - point.t > box.span) {
      if (run !== "") paths.push(run);
      run = "";
      continue;
    }
    run += `${run === "" ? "M" : " L"}${x(point.t).toFixed(1)},${y(point.v).toFixed(1)}`;
  }
  if (run !== "") paths.push(run);
  return paths;
}

/**
 * A ceiling for the y axis: the largest value shown, rounded up to 1, 2 or 5
 * times a power of ten, so the scale does not jitter with every point.
 * @param {Point[]} points
 * @param {number} floor the smallest ceiling (a flat line at 0 sits on the bottom)
 */
export function niceMax(points, floor) {
  const top = Math.max(floor, ...points.map((p) => p.v ?? 0));
  const power = 10 ** Math.floor(Math.log10(top));
  const step = [1, 2, 5, 10].find((m) => m * power >= top) ?? 10;
  return step * power;
}

/**
 * @param {string} name
 * @param {Record<string, string>} attributes
 */
function svgElement(name, attributes) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  return element;
}

/** The width never shows less than this, so a new page's first points do not stretch edge to edge. */
const MIN_SPAN_MS = 10_000;

/**
 * How much time the width shows: the history there is, between MIN_SPAN_MS
 * and `span`, so the line fills the chart from the first seconds on.
 * @param {Point[]} points
 * @param {number} span
 */
export function shownSpan(points, span) {
  const first = points[0]?.t ?? 0;
  const last = points.at(-1)?.t ?? 0;
  return Math.min(span, Math.max(MIN_SPAN_MS, last - first));
}

/**
 * Draws `points` into `svg` (replacing what it held), with a faint line at
 * the ceiling; returns the ceiling and the time shown, for the caption.
 * @param {SVGSVGElement} svg
 * @param {Point[]} points
 * @param {{ span: number, floor: number }} options `span`: the most time shown (ms)
 */
export function drawSparkline(svg, points, options) {
  const width = 240;
  const height = 48;
  const max = niceMax(points, options.floor);
  const span = shownSpan(points, options.span);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("preserveAspectRatio", "none");
  const ceiling = svgElement("line", {
    x1: "0",
    x2: String(width),
    y1: "0.5",
    y2: "0.5",
    class: "ceiling",
  });
  const lines = sparkPaths(points, { width, height, span, max }).map((d) =>
    svgElement("path", { d, class: "line" }),
  );
  svg.replaceChildren(ceiling, ...lines);
  return { max, span };
}
