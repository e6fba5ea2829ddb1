import { render } from "preact";
import { App } from "./ui/App";
import { store } from "./store";
import "./styles.css";

void store.boot();
render(<App />, document.getElementById("app")!);
