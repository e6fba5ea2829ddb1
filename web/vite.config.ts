import preact from "@preact/preset-vite";
import { defineConfig } from "vitest/config";

// The gateway serves dist/ at / (services/gateway/src/chips_gateway/webapp.py). In
// development, `npm run dev` proxies the API and the socket to a gateway on :8080.
export default defineConfig({
  plugins: [preact()],
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true, modulePreload: { polyfill: false } },
  server: {
    proxy: {
      "/v1": { target: "http://127.0.0.1:8080", ws: true },
    },
  },
  test: { environment: "node", include: ["src/**/*.test.ts"] },
});
