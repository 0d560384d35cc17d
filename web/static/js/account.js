// Sign-in and sign-up forms (web/templates/shop/signin.html, signup.html).
// The form posts through the JSON API; a problem is shown as its sentence in
// #flash, and success goes to the page named by ?next= (checked by the server).
import { api, flash } from "./api.js";

const form = document.querySelector("form[data-account-form]");
const PATHS = { signin: "/api/session", signup: "/api/accounts" };

function check(email, password, mode) {
  if (!email) return ["email", "Please enter your email address."];
  if (!password) return ["password", "Please enter your password."];
  if (mode === "signup" && password.length < 8) {
    return ["password", "Your password must be between 8 and 256 characters."];
  }
  return null;
}

// Which field a problem is about, so the keyboard focus lands there.
const FIELD_OF = { invalid_email: "email", email_taken: "email", weak_password: "password",
                   bad_credentials: "password" };

async function submit(event) {
  event.preventDefault();
  const mode = form.dataset.accountForm;
  const email = form.elements.email.value.trim();
  const password = form.elements.password.value;
  const wrong = check(email, password, mode);
  if (wrong) {
    flash(wrong[1]);
    form.elements[wrong[0]].setAttribute("aria-invalid", "true");
    form.elements[wrong[0]].focus();
    return;
  }
  const button = form.querySelector("button[type=submit]");
  button.disabled = true;
  form.setAttribute("aria-busy", "true");
  try {
    await api(PATHS[mode], { method: "POST", body: { email, password } });
    flash(mode === "signup" ? "Your account is ready." : "Signed in.", "ok");
    window.location.assign(form.dataset.next || "/");
  } catch (error) {
    flash(error.sentence);
    const field = form.elements[FIELD_OF[error.code] || "email"];
    field.setAttribute("aria-invalid", "true");
    field.focus();
    button.disabled = false;
    form.removeAttribute("aria-busy");
  }
}

if (form) {
  form.addEventListener("submit", submit);
  form.addEventListener("input", (e) => e.target.removeAttribute("aria-invalid"));
}
