/**
 * Prometheus text exposition read back by parse-prometheus-text-format: a
 * character-by-character parser ported from the official Python client's, not
 * a regular expression, which throws on a line that is not valid text format.
 *
 * It folds the series of a histogram into one and drops their labels when they
 * have any (its issue #13): the label sets and counts of each histogram are
 * read from a second parse of the same text in which histograms are untyped,
 * so that their `_count` lines are families of their own. Every sample is
 * still read by the parser; only the `# TYPE ... histogram` lines are left out
 * of that second parse.
 */
import parsePrometheusTextFormat, { type ParsedFamily } from "parse-prometheus-text-format";

export interface Series {
  labels: Record<string, string>;
  /** A gauge's or counter's value; a histogram's count. NaN and ±Inf as numbers. */
  value: number;
}

export interface Family {
  /** Lower case, as in `# TYPE`: gauge, counter, histogram, summary, untyped. */
  type: string;
  help: string;
  series: Series[];
}

export type Scrape = Record<string, Family>;

/** Parses exposition text; throws where the parser refuses a line. */
export function parseMetrics(text: string): Scrape {
  // The format ends every line with a line feed, the last one included; the parser
  // would silently drop the sample of a last line without one, so it is refused here.
  if (text !== "" && !text.endsWith("\n")) throw new Error("exposition text must end with \\n");
  const families = parsePrometheusTextFormat(text);
  const histograms = new Set(families.filter((f) => f.type === "HISTOGRAM").map((f) => f.name));
  const untyped =
    histograms.size === 0
      ? []
      : parsePrometheusTextFormat(
          text
            .split("\n")
            .filter((line) => !(line.startsWith("# TYPE ") && line.endsWith(" histogram")))
            .join("\n"),
        );
  const out: Scrape = {};
  for (const family of families) {
    out[family.name] = {
      type: family.type.toLowerCase(),
      help: family.help,
      // Untyped, the `_count` lines of each label set (which come after its buckets and
      // sum) are a family of their own each time: all of them together are the series.
      series: histograms.has(family.name)
        ? untyped.filter((f) => f.name === `${family.name}_count`).flatMap(seriesOf)
        : seriesOf(family),
    };
  }
  return out;
}

function seriesOf(family: ParsedFamily): Series[] {
  return family.metrics.map((sample) => ({
    labels: sample.labels ?? {},
    value: numberOf(sample.value),
  }));
}

/**
 * The parser keeps values as text, and takes whatever follows the labels as
 * the value: a line it scanned wrongly (an unterminated label value swallows
 * the rest of the line) shows here as a value that is no number, and is
 * refused. The format spells infinities `+Inf` and `-Inf`.
 */
function numberOf(text: string | undefined): number {
  const lower = (text ?? "").toLowerCase();
  if (lower === "+inf" || lower === "inf") return Number.POSITIVE_INFINITY;
  if (lower === "-inf") return Number.NEGATIVE_INFINITY;
  if (lower === "nan") return Number.NaN;
  const value = lower === "" ? Number.NaN : Number(text);
  if (Number.isNaN(value)) throw new Error(`not a sample value: ${JSON.stringify(text)}`);
  return value;
}

/** The value of `name`'s series whose `label` is `value`, if there is one. */
export function seriesValue(
  scrape: Scrape,
  name: string,
  label: string,
  value: string,
): number | undefined {
  return scrape[name]?.series.find((s) => s.labels[label] === value)?.value;
}
