pub mod datatype;
