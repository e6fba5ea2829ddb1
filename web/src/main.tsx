import { render } from "preact";
import { App } from "./ui/App";
import { store } from "./store";
import "./styles.css";

if (store.token) store.start();
render(<App />, document.getElementById("app")!);
