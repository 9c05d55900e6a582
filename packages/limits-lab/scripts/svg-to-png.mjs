// Renders an SVG chart (renderTimelineSvg's output) to a PNG with resvg, a devDependency of
// limits-lab: how docs/demo-chart.png is made from the latency-spike demo's chart.
//
//   node packages/limits-lab/scripts/svg-to-png.mjs chart.svg chart.png [--width=1400]
//
// --width scales the picture to that many px wide (default: the SVG's own width). Text uses the
// system's fonts, DejaVu Sans for the chart's sans-serif where it is installed.
import { readFileSync, writeFileSync } from 'node:fs';
import { Resvg } from '@resvg/resvg-js';

const [input, output] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const widthArg = process.argv.find((a) => a.startsWith('--width='));
if (input === undefined || output === undefined) {
  console.error('usage: node svg-to-png.mjs chart.svg chart.png [--width=1400]');
  process.exit(2);
}
const width = widthArg === undefined ? undefined : Number(widthArg.slice('--width='.length));
if (width !== undefined && !(Number.isInteger(width) && width >= 100 && width <= 10_000)) {
  console.error(`--width must be an integer in [100, 10000], got ${widthArg.slice(8)}`);
  process.exit(2);
}
const resvg = new Resvg(readFileSync(input), {
  fitTo: width === undefined ? { mode: 'original' } : { mode: 'width', value: width },
  font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans', sansSerifFamily: 'DejaVu Sans' },
});
const image = resvg.render();
const png = image.asPng();
writeFileSync(output, png);
console.log(`${output}: ${image.width} × ${image.height} px, ${(png.length / 1024).toFixed(0)} KB`);
