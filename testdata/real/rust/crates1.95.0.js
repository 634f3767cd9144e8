window.ALL_CRATES = ["alloc","core","proc_macro","std","std_detect","test"];
//{"start":21,"fragment_lengths":[7,7,13,6,13,7]}