/** The package ships no types: the shape of what it returns (prom2json's). */
declare module "parse-prometheus-text-format" {
  export interface ParsedSample {
    labels?: Record<string, string>;
    value?: string;
    buckets?: Record<string, string>;
    quantiles?: Record<string, string>;
    count?: string;
    sum?: string;
  }
  export interface ParsedFamily {
    name: string;
    help: string;
    /** Upper case: GAUGE, COUNTER, HISTOGRAM, SUMMARY or UNTYPED. */
    type: string;
    metrics: ParsedSample[];
  }
  /** Throws on a line that is not valid text exposition format. */
  export default function parsePrometheusTextFormat(text: string): ParsedFamily[];
}
