//! The help window (H or F1): every key and mouse action, from the one table the keymap keeps, and a
//! word on editing clip boxes with the gizmo.
use crate::input::keymap::BINDINGS;
use crate::input::Action;
use imgui::Condition;

/// Builds the help window; closing it with its × asks for [`Action::ToggleHelp`].
pub fn build(ui: &imgui::Ui, actions: &mut Vec<Action>) {
    let [w, h] = ui.io().display_size;
    let mut open = true;
    ui.window("Help: keys and mouse (H or F1 closes)##help")
        .position([w * 0.5, h * 0.5], Condition::Always)
        .position_pivot([0.5, 0.5])
        .always_auto_resize(true)
        .collapsible(false)
        .movable(false)
        .bg_alpha(0.92)
        .save_settings(false)
        .opened(&mut open)
        .build(|| {
            let width = BINDINGS.iter().map(|b| ui.calc_text_size(b.input)[0]).fold(0.0, f32::max);
            for b in BINDINGS {
                let x = ui.cursor_pos()[0];
                ui.text_colored([1.0, 0.85, 0.4, 1.0], b.input);
                ui.same_line_with_pos(x + width + 16.0);
                ui.text(b.does);
            }
            ui.separator();
            ui.text_disabled(
                "Clip boxes: 'edit' in the View section (or X) shows arrows, rings and face squares on a box;",
            );
            ui.text_disabled("drag them to move, turn and resize it. Elsewhere the mouse moves the camera. Esc: done.");
            ui.text_disabled("The panel's buttons do what their keys do. `pcv --help` lists these too.");
        });
    if !open {
        actions.push(Action::ToggleHelp);
    }
}
