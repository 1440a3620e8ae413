/**
 * SVG charts for docs/benchmarks.md: Vega-Lite specifications compiled and
 * rendered headless with Vega (no browser, no canvas).
 */
import { View, parse } from "vega";
import { type TopLevelSpec, compile } from "vega-lite";

export interface ChartSpec {
  /** File name under docs/benchmarks/. */
  file: string;
  title: string;
  spec: TopLevelSpec;
}

export interface SeriesPoint {
  x: number | string;
  y: number;
  series: string;
}

/** Lines with points, one per series; an ordinal x keeps client counts evenly spaced. */
export function lineChart(options: {
  file: string;
  title: string;
  xTitle: string;
  yTitle: string;
  points: SeriesPoint[];
  xType?: "ordinal" | "quantitative";
  /** Vertical rules (for example the moment of a crash) at these x values. */
  rules?: number[];
}): ChartSpec {
  const points = options.points.filter((p) => Number.isFinite(p.y));
  const line = {
    mark: { type: "line" as const, point: options.xType !== "quantitative" },
    encoding: {
      x: {
        field: "x",
        type: options.xType ?? "ordinal",
        title: options.xTitle,
        sort: null,
        axis: { labelAngle: 0 },
      },
      y: { field: "y", type: "quantitative" as const, title: options.yTitle },
      color: {
        field: "series",
        type: "nominal" as const,
        title: null,
        legend: { labelLimit: 400 },
      },
    },
  };
  const spec = {
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: options.title,
    width: 420,
    height: 220,
    data: { values: points },
    layer: [
      line,
      ...(options.rules ?? []).map((x) => ({
        data: { values: [{ x }] },
        mark: { type: "rule" as const, strokeDash: [4, 4], color: "gray" },
        encoding: { x: { field: "x", type: "quantitative" as const } },
      })),
    ],
  } as TopLevelSpec;
  return { file: options.file, title: options.title, spec };
}

/** Renders a chart to an SVG document. */
export async function renderSvg(chart: ChartSpec): Promise<string> {
  const vegaSpec = compile(chart.spec).spec;
  const view = new View(parse(vegaSpec), { renderer: "none" });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
