import { html } from "htm/preact";
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { UsagePoint } from "./api.js";

/** A quota's used and hard over time (uPlot), as recorded by the server since it started. */
export function QuotaChart(props: { resource: string; points: UsagePoint[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const data = (): uPlot.AlignedData => {
    const points =
      props.points.length === 1
        ? [props.points[0]!, { ...props.points[0]!, t: Date.now() / 1000 }]
        : props.points;
    return [points.map((p) => p.t), points.map((p) => p.used), points.map((p) => p.hard)];
  };
  useEffect(() => {
    if (!box.current) return;
    // The box has no width before layout: the chart's is the page's, up to 420 px.
    const width = Math.max(240, Math.min(420, document.documentElement.clientWidth - 48));
    plot.current = new uPlot(
      {
        width,
        height: 160,
        series: [
          {},
          { label: "used", stroke: "#0b57d0", width: 2, fill: "rgba(11,87,208,0.12)" },
          { label: "hard", stroke: "#b3261e", width: 1, dash: [6, 4] },
        ],
        axes: [{}, { size: 60 }],
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
      },
      data(),
      box.current,
    );
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);
  useEffect(() => {
    plot.current?.setData(data());
  }, [props.points]);
  return html`<figure class="chart">
    <div ref=${box} role="img" aria-label=${`${props.resource}: used against hard over time`}></div>
    <figcaption>${props.resource}</figcaption>
  </figure>`;
}
