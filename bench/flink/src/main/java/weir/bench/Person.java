// SPDX-License-Identifier: Apache-2.0
package weir.bench;

/** A Nexmark person. */
public class Person {
  public long id;
  public String name;
  public String emailAddress;
  public String creditCard;
  public String city;
  public String state;
  public long dateTime;
  public String extra;

  public Person() {}
}
